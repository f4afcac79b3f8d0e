/**
 * The embedded lexical index: one contentless FTS5 table per vss table (`lex_<table id>`), so
 * BM25's statistics are the table's own. It holds only the tokens (the text stays in
 * vector_payloads) and is written in the same transaction as the rows, so a write that
 * resolved is searchable lexically after a crash too. User text never reaches FTS5's query
 * syntax: the words are split here (lexical-terms.ts) and each one is quoted.
 */
import type { LexicalTokenizer } from '../api.ts';
import { queryWords } from '../lexical-terms.ts';
import type { Db, Sqlite } from './sql.ts';

const TOKENIZE: Record<LexicalTokenizer, string> = {
  porter: 'porter unicode61',
  unicode61: 'unicode61',
  trigram: 'trigram',
};

/** The FTS5 table of a vss table; the id is an integer from the catalog, never user text. */
export const lexTable = (tableId: number): string => `lex_${Math.trunc(tableId)}`;

/** Creates the table's index (inside the caller's transaction). */
export function createLexicalIndex(db: Sqlite, tableId: number, tokenizer: LexicalTokenizer): void {
  db.exec(`CREATE VIRTUAL TABLE ${lexTable(tableId)} USING fts5(text, content='', contentless_delete=1, tokenize='${TOKENIZE[tokenizer]}')`);
}

/** Indexes the rows of a table that have text (a database from before the index existed). */
export function fillLexicalIndex(db: Sqlite, tableId: number): void {
  db.prepare(
    `INSERT INTO ${lexTable(tableId)} (rowid, text)
     SELECT p.id, p.text FROM vectors v JOIN vector_payloads p ON p.id = v.id WHERE v.table_id = ? AND p.text IS NOT NULL AND p.text != ''`,
  ).run(tableId);
}

/** Keeps rows' tokens current; call inside the transaction that writes the rows. */
export function indexTexts(db: Db, tableId: number, ids: readonly number[], texts: readonly (string | null | undefined)[]): void {
  const t = lexTable(tableId);
  const put = db.stmt(`INSERT OR REPLACE INTO ${t} (rowid, text) VALUES (?, ?)`);
  const del = db.stmt(`DELETE FROM ${t} WHERE rowid = ?`);
  for (let i = 0; i < ids.length; i++) {
    const text = texts[i];
    if (typeof text === 'string' && text !== '') put.run(ids[i], text);
    else del.run(ids[i]);
  }
}

/** Forgets deleted rows; call inside the transaction that deletes them. */
export function unindexRows(db: Db, tableId: number, ids: readonly number[]): void {
  const del = db.stmt(`DELETE FROM ${lexTable(tableId)} WHERE rowid = ?`);
  for (const id of ids) del.run(id);
}

/** The FTS5 MATCH for the query's words, each quoted (so `"`, `*`, `NEAR`, `:`... are literal); null when it has none. */
export function matchExpression(text: string): string | null {
  const words = queryWords(text);
  if (words.length === 0) return null;
  return words.map((w) => `"${w.replaceAll('"', '""')}"`).join(' OR ');
}

/**
 * The best `limit` rows by BM25 (positive, higher better), with an optional SQL condition on the
 * `vectors` row (a compiled metadata filter) applied before ranking.
 */
export function rankLexical(db: Db, tableId: number, match: string, limit: number, filter?: { sql: string; params: unknown[] }): { rowId: number; score: number }[] {
  const t = lexTable(tableId);
  if (filter === undefined) {
    return db.stmt(`SELECT rowid AS rowId, -bm25(${t}) AS score FROM ${t} WHERE ${t} MATCH ? ORDER BY rank LIMIT ?`).all(match, limit) as { rowId: number; score: number }[];
  }
  return db.raw
    .prepare(
      `SELECT ${t}.rowid AS rowId, -bm25(${t}) AS score FROM ${t} JOIN vectors ON vectors.id = ${t}.rowid
       WHERE ${t} MATCH ? AND vectors.table_id = ? AND ${filter.sql} ORDER BY bm25(${t}) LIMIT ?`,
    )
    .all(match, tableId, ...filter.params, limit) as { rowId: number; score: number }[];
}
