/**
 * The embedded lexical index: one contentless FTS5 table per vss table (`lex_<table id>`), so
 * BM25's statistics are the table's own. It holds only the tokens (the text stays in
 * vector_payloads) and is written in the same transaction as the rows, so a write that
 * resolved is searchable lexically after a crash too. User text never reaches FTS5's query
 * syntax: the words are split here (lexical-terms.ts) and each one is quoted.
 *
 * FTS5 ranks an OR of words by scoring every row that holds any of them, so a common word costs a
 * scan of most of the table, and its bm25() uses totals that rewrites inflate. A table's unfiltered
 * searches are answered from posting lists in memory instead (lexical-postings.ts), with the exact
 * totals of lexical_totals. Filtered ones, and any while
 * the lists are being built, are pruned (storage/lexical/prune.ts): FTS5 ranks only the rows of the
 * rarer words, and the candidates' scores over every word are computed from their texts with
 * bm25.ts, from the document frequencies (fts5vocab) and the exact totals of lexical_totals.
 */
import type { LexicalTokenizer } from '../api.ts';
import { queryWords } from '../lexical-terms.ts';
import { BM25_K1, type Bm25Stats } from '../lexical/bm25.ts';
import { type Candidate, isCommon, prunedTopK, weigh } from '../lexical/prune.ts';
import { tokenize } from '../lexical/tokenize.ts';
import { forgetPostings, postingsTouched, searchPostings } from './lexical-postings.ts';
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
  // A table id can be reused after a table is deleted: nothing known of the old one may remain.
  caches.get(db)?.delete(tableId);
  forgetPostings(db, tableId);
  db.exec(`CREATE VIRTUAL TABLE ${lexTable(tableId)} USING fts5(text, content='', contentless_delete=1, tokenize='${TOKENIZE[tokenizer]}')`);
  // Databases migrating from before the totals table get it, filled, by a later migration.
  if (db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'lexical_totals'`).get() !== undefined) {
    db.prepare('INSERT OR REPLACE INTO lexical_totals (table_id, rows, tokens) VALUES (?, 0, 0)').run(tableId);
  }
}

/**
 * The table's rows with text and their tokens, counted from FTS5's per-row sizes (%_docsize,
 * which deletes do keep exact) for lexical_totals: once per table, by the migration that made it.
 */
export function countLexicalTotals(db: Sqlite, tableId: number): Bm25Stats {
  let rows = 0;
  let tokens = 0;
  for (const sz of db.prepare(`SELECT sz FROM ${lexTable(tableId)}_docsize`).pluck().iterate() as IterableIterator<Buffer>) {
    rows++;
    tokens += varint(sz, 0)[0];
  }
  return { rows, tokens };
}

/** Indexes the rows of a table that have text (a database from before the index existed). */
export function fillLexicalIndex(db: Sqlite, tableId: number): void {
  db.prepare(
    `INSERT INTO ${lexTable(tableId)} (rowid, text)
     SELECT p.id, p.text FROM vectors v JOIN vector_payloads p ON p.id = v.id WHERE v.table_id = ? AND p.text IS NOT NULL AND p.text != ''`,
  ).run(tableId);
}

/**
 * Keeps rows' tokens current, and the table's totals with them; call inside the transaction that
 * writes the rows. FTS5 never lowers a contentless_delete table's own totals (neither a DELETE nor
 * an INSERT OR REPLACE does), so they count every version of a rewritten row: BM25's row count
 * and average length come from lexical_totals instead, kept here from FTS5's per-row sizes.
 */
export function indexTexts(db: Db, tableId: number, ids: readonly number[], texts: readonly (string | null | undefined)[]): void {
  touched(db, tableId, ids);
  const t = lexTable(tableId);
  const put = db.stmt(`INSERT INTO ${t} (rowid, text) VALUES (?, ?)`);
  const size = db.stmt(`SELECT sz FROM ${t}_docsize WHERE id = ?`).pluck();
  const change = { rows: 0, tokens: 0 };
  for (let i = 0; i < ids.length; i++) {
    unindexRow(db, tableId, ids[i], change);
    const text = texts[i];
    if (typeof text === 'string' && text !== '') {
      put.run(ids[i], text);
      change.rows++;
      change.tokens += varint(size.get(ids[i]) as Buffer, 0)[0];
    }
  }
  addTotals(db, tableId, change);
}

/** Forgets deleted rows; call inside the transaction that deletes them. */
export function unindexRows(db: Db, tableId: number, ids: readonly number[]): void {
  touched(db, tableId, ids);
  const change = { rows: 0, tokens: 0 };
  for (const id of ids) unindexRow(db, tableId, id, change);
  addTotals(db, tableId, change);
}

/** Removes a row's entry, if it has one, and takes it off `change`. */
function unindexRow(db: Db, tableId: number, id: number, change: Bm25Stats): void {
  const t = lexTable(tableId);
  const sz = db.stmt(`SELECT sz FROM ${t}_docsize WHERE id = ?`).pluck().get(id) as Buffer | undefined;
  if (sz === undefined) return;
  db.stmt(`DELETE FROM ${t} WHERE rowid = ?`).run(id);
  change.rows--;
  change.tokens -= varint(sz, 0)[0];
}

function addTotals(db: Db, tableId: number, change: Bm25Stats): void {
  if (change.rows !== 0 || change.tokens !== 0) db.stmt('UPDATE lexical_totals SET rows = rows + ?, tokens = tokens + ? WHERE table_id = ?').run(change.rows, change.tokens, tableId);
}

/** The FTS5 MATCH for the words, each quoted (so `"`, `*`, `NEAR`, `:`... are literal); null when there are none. */
const matchWords = (words: readonly string[]): string | null => (words.length === 0 ? null : words.map((w) => `"${w.replaceAll('"', '""')}"`).join(' OR '));

/** The FTS5 MATCH for the query's words (see matchWords); null when it has none. */
export const matchExpression = (text: string): string | null => matchWords(queryWords(text));

type Filter = { sql: string; params: unknown[] };

/**
 * The best `limit` rows by BM25 (positive, higher better), with an optional SQL condition on the
 * `vectors` row (a compiled metadata filter) applied before ranking.
 */
export function rankLexical(db: Db, tableId: number, match: string, limit: number, filter?: Filter): { rowId: number; score: number }[] {
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

/** The table's rows with text and their tokens, exact (see indexTexts): BM25's N and total length. */
export function lexicalTotals(db: Db, tableId: number): Bm25Stats {
  return (db.stmt('SELECT rows, tokens FROM lexical_totals WHERE table_id = ?').get(tableId) as Bm25Stats | undefined) ?? { rows: 0, tokens: 0 };
}

/**
 * FTS5's own totals (its "averages" record, rowid 1 of the %_data table), which its bm25() ranks
 * by: never lowered by deletes and rewrites, so at least the true ones (see indexTexts).
 */
export function fts5Totals(db: Db, tableId: number): Bm25Stats {
  const block = db.stmt(`SELECT block FROM ${lexTable(tableId)}_data WHERE id = 1`).pluck().get() as Buffer | undefined;
  if (block === undefined) return { rows: 0, tokens: 0 };
  const [rows, at] = varint(block, 0);
  const [tokens] = varint(block, at);
  return { rows, tokens };
}

/** An SQLite varint (big-endian groups of 7 bits, the 9th byte whole) and the offset after it. */
function varint(b: Buffer, at: number): [value: number, next: number] {
  let v = 0;
  for (let i = 0; i < 8; i++) {
    const c = b[at + i] ?? 0;
    v = v * 128 + (c & 0x7f);
    if ((c & 0x80) === 0) return [v, at + i + 1];
  }
  return [v * 256 + (b[at + 8] ?? 0), at + 9];
}

/**
 * What one connection knows of a table's lexical index between queries: whether its fts5vocab view
 * (a temp table) exists, the rows written or deleted since the caches were started (rolled-back
 * writes included, which only costs a re-read), the document frequencies counted and the heads
 * read (see head below). Writes go through the same connection, so nothing here can miss one.
 */
interface TableCache {
  vocab: boolean;
  touched: number[];
  dfs: Map<string, { df: number; at: number }>;
  heads: Map<string, Head>;
}
/** The best rows of one token by its BM25 alone, read once (FTS5 ranks the whole list to find them). */
interface Head {
  ids: number[];
  /** Each row's share of idf then (its BM25 for the token over the token's idf). */
  shares: number[];
  /** The share of idf (tf (k1 + 1) / (tf + K)) of the last row listed, 0 when every row is; no unlisted row had more. */
  tail: number;
  /** FTS5's average length when it was read (what its scores were computed with). */
  avg: number;
  /** touched.length when it was read: rows written since may belong in it. */
  at: number;
}
const caches = new WeakMap<Sqlite, Map<number, TableCache>>();
function cacheOf(db: Sqlite, tableId: number): TableCache {
  let tables = caches.get(db);
  if (tables === undefined) caches.set(db, (tables = new Map()));
  let c = tables.get(tableId);
  if (c === undefined) tables.set(tableId, (c = { vocab: false, touched: [], dfs: new Map(), heads: new Map() }));
  return c;
}
/** Past this many rows written, a table's caches start afresh (a head's candidates include every row written since it was read). */
const MAX_TOUCHED = 20_000;
/** Tokens whose counts a table keeps (a few bytes each), and whose heads (~16 KB each). */
const MAX_COUNTS = 5_000;
const MAX_HEADS = 500;

function touched(db: Db, tableId: number, ids: readonly number[]): void {
  postingsTouched(db, tableId, ids);
  const c = cacheOf(db.raw, tableId);
  if (c.touched.length + ids.length > MAX_TOUCHED) {
    caches.get(db.raw)!.delete(tableId);
    cacheOf(db.raw, tableId).vocab = c.vocab;
  } else c.touched.push(...ids);
}

const remember = <V>(m: Map<string, V>, key: string, v: V, max: number): void => {
  if (m.size >= max) m.delete(m.keys().next().value!);
  m.set(key, v);
};

/**
 * How many rows hold the token, from FTS5's index (fts5vocab 'row', which reads the token's whole
 * list), counted again only after writes to the table. A common token's count is kept even then:
 * while, even if every row written since had dropped it, it would still be in half the rows, its
 * idf stays floored and no score depends on the exact count.
 */
function documentFrequency(db: Db, tableId: number, token: string, rows: number): number {
  const c = cacheOf(db.raw, tableId);
  const writes = c.touched.length;
  const known = c.dfs.get(token);
  if (known !== undefined) {
    if (known.at === writes) return known.df;
    const least = known.df - (writes - known.at);
    if (isCommon(least, rows)) return Math.max(least, Math.ceil(rows / 2));
  }
  const t = lexTable(tableId);
  if (!c.vocab) {
    db.raw.exec(`CREATE VIRTUAL TABLE IF NOT EXISTS temp.${t}_vocab USING fts5vocab(main, ${t}, 'row')`);
    c.vocab = true;
  }
  const df = (db.stmt(`SELECT doc FROM temp.${t}_vocab WHERE term = ?`).pluck().get(token) as number | undefined) ?? 0;
  remember(c.dfs, token, { df, at: writes }, MAX_COUNTS);
  return df;
}

/** A head lists at least this many rows: one read serves queries of other limits. */
const HEAD_ROWS = 1000;

/**
 * The best rows of a token by its BM25 alone (prune.ts's head), read from FTS5 once and kept until
 * the table's caches start afresh; the rows written since it was read are listed too, and its
 * tail allows for the average length having grown since (a row's share grows at most as much).
 */
function head(db: Db, tableId: number, word: string, token: string, tokenIdf: number, stats: Bm25Stats, depth: number): { rows: Candidate<number>[]; tail: number } {
  const c = cacheOf(db.raw, tableId);
  const avg = stats.tokens / stats.rows;
  let h = c.heads.get(token);
  if (h === undefined || (h.tail > 0 && h.ids.length < depth)) {
    const want = Math.max(depth, HEAD_ROWS);
    const best = rankLexical(db, tableId, matchWords([word])!, want + 1);
    const all = best.length <= want;
    const listed = best.slice(0, want);
    // FTS5 ranked by its own totals (at least the true ones: see fts5Totals), so its idf is no
    // less than ours and the shares are bounds; its average length is what they were read at.
    const fts5 = fts5Totals(db, tableId);
    h = { ids: listed.map((r) => r.rowId), shares: listed.map((r) => r.score / tokenIdf), tail: all ? 0 : best[want - 1].score / tokenIdf, avg: fts5.tokens / fts5.rows, at: c.touched.length };
    remember(c.heads, token, h, MAX_HEADS);
  }
  const grown = Math.max(1, avg / h.avg);
  const share = (x: number): number => tokenIdf * Math.min(BM25_K1 + 1, x * grown);
  const rows: Candidate<number>[] = h.ids.map((id, k) => ({ id, partial: share(h!.shares[k]) }));
  for (const id of c.touched.slice(h.at)) rows.push({ id, partial: Infinity });
  return { rows, tail: h.tail === 0 ? 0 : Math.min(BM25_K1 + 1, h.tail * grown) };
}

/**
 * The best `limit` rows for the query's words by BM25 (positive, higher better; ties by key), with
 * an optional SQL condition on the `vectors` row, pruned as prune.ts describes, with the exact
 * totals of lexical_totals at every table size (FTS5's own drift upwards after rewrites). Queries
 * with a word that splits into several tokens (trigram tables; fts5vocab has no count for it) are
 * ranked by FTS5 alone, every row holding a word scored.
 */
export async function searchLexical(db: Db, tableId: number, tokenizer: LexicalTokenizer, text: string, limit: number, filter?: Filter): Promise<{ rowId: number; score: number; key?: string }[]> {
  const words = queryWords(text);
  const split = words.map((w) => ({ word: w, phrase: tokenize(tokenizer, w) })).filter((p) => p.phrase.length > 0);
  const stats = lexicalTotals(db, tableId);
  if (split.length === 0 || stats.rows === 0) return [];
  if (split.some((p) => p.phrase.length > 1)) return rankLexical(db, tableId, matchWords(words)!, limit, filter);
  // Trigram tables are left to FTS5: a row holds about as many trigrams as characters, too many to keep.
  if (filter === undefined && tokenizer !== 'trigram') {
    const found = await searchPostings(db, tableId, tokenizer, split.map((p) => p.phrase[0]), stats, limit);
    if (found !== null) return found;
  }
  const dfs = new Map<string, number>();
  for (const { phrase } of split) if (!dfs.has(phrase[0])) dfs.set(phrase[0], documentFrequency(db, tableId, phrase[0], stats.rows));
  const phrases = weigh(split.map((p) => ({ phrase: p.phrase, df: dfs.get(p.phrase[0])! })), stats.rows);
  // FTS5 scores by its own totals: its idf is no less than ours, and a row's share of it grows at
  // most as the average length does, so its scores times this are bounds on ours (prune.ts needs bounds).
  const fts5 = fts5Totals(db, tableId);
  const grown = Math.max(1, stats.tokens / stats.rows / (fts5.tokens / fts5.rows));
  const ranked = prunedTopK(phrases, stats, limit, {
    candidates: (essential, depth) =>
      rankLexical(db, tableId, matchWords(essential.map((i) => split[i].word))!, depth, filter).map((r) => ({ id: r.rowId, partial: r.score * grown })),
    rows(ids) {
      const found = db
        .stmt('SELECT v.id, v.key, p.text FROM vectors v JOIN vector_payloads p ON p.id = v.id WHERE v.id IN (SELECT value FROM json_each(?))')
        .all(JSON.stringify(ids)) as { id: number; key: string; text: string | null }[];
      return new Map(found.filter((r) => typeof r.text === 'string').map((r) => [r.id, { key: r.key, tokens: tokenize(tokenizer, r.text!) }]));
    },
    // Heads are of the whole table: with a filter, the rows they list may all fail it.
    head: filter === undefined ? (i, depth) => head(db, tableId, split[i].word, split[i].phrase[0], phrases[i].idf, stats, depth) : undefined,
    pairs(seeds, depth) {
      // FTS5 scores a row by the phrases of the pairs it matches: (h - 1) times its BM25 over the h
      // seeding phrases it holds. Never less, so a bound, as prune.ts needs.
      const words = seeds.map((i) => `"${split[i].word.replaceAll('"', '""')}"`);
      const pairs = words.flatMap((a, x) => words.slice(x + 1).map((b) => `(${a} AND ${b})`));
      return rankLexical(db, tableId, pairs.join(' OR '), depth).map((r) => ({ id: r.rowId, partial: r.score * grown }));
    },
  });
  return ranked.map((r) => ({ rowId: r.id, score: r.score }));
}
