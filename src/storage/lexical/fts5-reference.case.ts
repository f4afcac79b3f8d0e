/**
 * For tests: SQLite FTS5 itself (through better-sqlite3) as the reference a JS lexical index must
 * agree with: the same rows, ranked by FTS5's bm25(), for a query as the embedded backend puts it
 * to FTS5 (its matchExpression). Rows with text '' are left out, as the embedded backend does.
 */
import { Database } from '../embedded/sqlite-driver.ts';
import type { LexicalTokenizer } from '../api.ts';
import { compareCodePoints } from '../../index/filter.ts';
import { matchExpression } from '../embedded/lexical.ts';

export const FTS5_TOKENIZE: Record<LexicalTokenizer, string> = { porter: 'porter unicode61', unicode61: 'unicode61', trigram: 'trigram' };

/** An in-memory FTS5 table of `rows` (key -> text; null: no row in the index). */
export function fts5Ranker(tokenizer: LexicalTokenizer, rows: Iterable<[key: string, text: string | null]>): { rank(text: string): { key: string; score: number }[]; close(): void } {
  const db = new Database(':memory:');
  db.exec(`CREATE VIRTUAL TABLE f USING fts5(text, tokenize = '${FTS5_TOKENIZE[tokenizer]}')`);
  const keys: string[] = [];
  const ins = db.prepare('INSERT INTO f (rowid, text) VALUES (?, ?)');
  db.transaction(() => {
    for (const [key, text] of rows) {
      if (text === null || text === '') continue;
      keys.push(key);
      ins.run(keys.length, text);
    }
  })();
  const q = db.prepare('SELECT rowid AS id, -bm25(f) AS score FROM f WHERE f MATCH ?');
  return {
    rank(text) {
      const match = matchExpression(text);
      if (match === null) return [];
      const out = (q.all(match) as { id: number; score: number }[]).map((r) => ({ key: keys[r.id - 1], score: r.score }));
      return out.sort((a, b) => b.score - a.score || compareCodePoints(a.key, b.key));
    },
    close: () => db.close(),
  };
}
