/**
 * For tests: SQLite FTS5 itself (through better-sqlite3) as the reference a JS lexical index must
 * agree with: the same rows, ranked by FTS5's bm25(), for a query searched the contract's way
 * (the query's terms, each literally, any may match).
 */
import Database from 'better-sqlite3';
import type { LexicalTokenizer } from '../api.ts';
import { compareCodePoints } from '../../index/filter.ts';
import { porterStem } from './porter.ts';
import { tokenize, unicode61Tokens } from './tokenize.ts';

export const FTS5_TOKENIZE: Record<LexicalTokenizer, string> = { porter: 'porter unicode61', unicode61: 'unicode61', trigram: 'trigram' };

/**
 * An FTS5 MATCH expression for `text`: each distinct term once, quoted, joined by OR. A porter
 * table is given the unstemmed word (FTS5 stems the query itself), the first one per stem.
 */
export function fts5Match(tokenizer: LexicalTokenizer, text: string): string | null {
  const quote = (s: string): string => `"${s.replace(/"/g, '""')}"`;
  const byTerm = new Map<string, string>();
  if (tokenizer === 'porter') for (const w of unicode61Tokens(text)) if (!byTerm.has(porterStem(w))) byTerm.set(porterStem(w), w);
  if (tokenizer !== 'porter') for (const t of tokenize(tokenizer, text)) byTerm.set(t, t);
  return byTerm.size === 0 ? null : [...byTerm.values()].map(quote).join(' OR ');
}

/** An in-memory FTS5 table of `rows` (key -> text; null: no row in the index). */
export function fts5Ranker(tokenizer: LexicalTokenizer, rows: Iterable<[key: string, text: string | null]>): { rank(text: string): { key: string; score: number }[]; close(): void } {
  const db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE f USING fts5(text, tokenize = '${FTS5_TOKENIZE[tokenizer]}')`);
  const keys: string[] = [];
  const ins = db.prepare('INSERT INTO f (rowid, text) VALUES (?, ?)');
  db.transaction(() => {
    for (const [key, text] of rows) {
      if (text === null) continue;
      keys.push(key);
      ins.run(keys.length, text);
    }
  })();
  const q = db.prepare('SELECT rowid AS id, -bm25(f) AS score FROM f WHERE f MATCH ?');
  return {
    rank(text) {
      const match = fts5Match(tokenizer, text);
      if (match === null) return [];
      const out = (q.all(match) as { id: number; score: number }[]).map((r) => ({ key: keys[r.id - 1], score: r.score }));
      return out.sort((a, b) => b.score - a.score || compareCodePoints(a.key, b.key));
    },
    close: () => db.close(),
  };
}
