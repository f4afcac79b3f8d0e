/**
 * The embedded backend's in-memory posting lists (storage/lexical/postings.ts), one per large table
 * searched lexically: what answers its unfiltered BM25 top k, FTS5 staying the durable index.
 *
 * They are derived from the committed rows only. A table's lists are built on its first lexical
 * search, a slice of rows per event-loop turn (searches use FTS5 meanwhile). Writes only note the
 * row ids they touch (inside their transaction, which may yet roll back); before the next search,
 * and in a later turn after the writes, those rows are read again as committed and indexed anew.
 * So a rolled-back write costs a re-read, and nothing here can hold what SQLite does not.
 */
import type { LexicalTokenizer } from '../api.ts';
import { BM25_K1, type Bm25Stats } from '../lexical/bm25.ts';
import { PostingIndex } from '../lexical/postings.ts';
import { seedPhrases, weigh } from '../lexical/prune.ts';
import { tokenize } from '../lexical/tokenize.ts';
import { compareCodePoints } from '../../index/filter.ts';
import type { Db, Sqlite } from './sql.ts';

interface Lists {
  index: PostingIndex;
  tokenizer: LexicalTokenizer;
  /** The last row id the build has read (rows are read in id order); null once built. */
  cursor: number | null;
  /** Rows written or deleted since they were last read. */
  pending: Set<number>;
  /** A turn is scheduled to build on or to read the pending rows. */
  scheduled: boolean;
}

const tables = new WeakMap<Sqlite, Map<number, Lists>>();

/** Searches the lists answered, in this process (tests check which path answered). */
export const postingSearches = { answered: 0 };

/** Rows read per event-loop turn while building (tens of milliseconds). */
const BUILD_SLICE = 2000;
/** Past this share of dead documents (rewritten or deleted rows), the lists are built afresh. */
const MAX_DEAD = 0.5;

/** Forgets a table's lists (its index was created anew: the id may be reused). */
export function forgetPostings(db: Sqlite, tableId: number): void {
  tables.get(db)?.delete(tableId);
}

/** Notes rows written or deleted (inside their transaction); they are read again once it is over. */
export function postingsTouched(db: Db, tableId: number, ids: readonly number[]): void {
  const l = tables.get(db.raw)?.get(tableId);
  if (l === undefined) return;
  for (const id of ids) l.pending.add(id);
  // Past this many, reading them all again costs about what a fresh build does.
  if (l.pending.size > Math.max(BUILD_SLICE, l.index.size / 2)) forgetPostings(db.raw, tableId);
  else schedule(db, tableId, l);
}

function schedule(db: Db, tableId: number, l: Lists): void {
  if (l.scheduled) return;
  l.scheduled = true;
  setImmediate(() => {
    l.scheduled = false;
    // Closed, or forgotten (dropped, rebuilt) meanwhile.
    if (!db.raw.open || tables.get(db.raw)?.get(tableId) !== l) return;
    if (l.cursor !== null) buildSlice(db, tableId, l);
    else readPending(db, tableId, l);
    if (l.cursor !== null) schedule(db, tableId, l);
  });
}

function buildSlice(db: Db, tableId: number, l: Lists): void {
  const rows = db
    .stmt('SELECT v.id, p.text FROM vectors v JOIN vector_payloads p ON p.id = v.id WHERE v.id > ? AND v.table_id = ? ORDER BY v.id LIMIT ?')
    .all(l.cursor, tableId, BUILD_SLICE) as { id: number; text: string | null }[];
  for (const r of rows) {
    l.index.set(r.id, r.text ? tokenize(l.tokenizer, r.text) : null);
    l.pending.delete(r.id);
  }
  l.cursor = rows.length < BUILD_SLICE ? null : rows[rows.length - 1].id;
}

function readPending(db: Db, tableId: number, l: Lists): void {
  if (l.pending.size === 0) return;
  const ids = [...l.pending];
  l.pending.clear();
  const found = db
    .stmt('SELECT v.id, p.text FROM vectors v JOIN vector_payloads p ON p.id = v.id WHERE v.table_id = ? AND v.id IN (SELECT value FROM json_each(?))')
    .all(tableId, JSON.stringify(ids)) as { id: number; text: string | null }[];
  const texts = new Map(found.map((r) => [r.id, r.text]));
  for (const id of ids) {
    const text = texts.get(id);
    l.index.set(id, text ? tokenize(l.tokenizer, text) : null);
  }
}

/** The table's lists when built and current; else null, and the build started. */
function current(db: Db, tableId: number, tokenizer: LexicalTokenizer): PostingIndex | null {
  let byTable = tables.get(db.raw);
  if (byTable === undefined) tables.set(db.raw, (byTable = new Map()));
  let l = byTable.get(tableId);
  if (l !== undefined && l.cursor === null && l.index.deadShare > MAX_DEAD) l = undefined;
  if (l === undefined || l.tokenizer !== tokenizer) {
    byTable.set(tableId, (l = { index: new PostingIndex(), tokenizer, cursor: 0, pending: new Set(), scheduled: false }));
    schedule(db, tableId, l);
    return null;
  }
  if (l.cursor !== null) return null;
  readPending(db, tableId, l);
  return l.index;
}

/**
 * The best `limit` rows for the query's terms (one token per query word, in query order) by BM25
 * with FTS5's totals `stats`, ties by key, under prune.ts's seeding rule; null while the table's
 * lists are not built (the caller asks FTS5).
 */
export function searchPostings(db: Db, tableId: number, tokenizer: LexicalTokenizer, terms: readonly string[], stats: Bm25Stats, limit: number): { rowId: number; score: number; key?: string }[] | null {
  const index = current(db, tableId, tokenizer);
  if (index === null) return null;
  const phrases = weigh(terms.map((t) => ({ phrase: [t], df: index.documentFrequency(t) })), stats.rows);
  const seeds = seedPhrases(phrases, stats.rows);
  if (seeds.length === 0) return [];
  // The terms that bring no rows still add to a row's score: at most idf (k1 + 1) each.
  const slack = phrases.reduce((s, p, i) => (p.df > 0 && !seeds.includes(i) ? s + p.idf * (BM25_K1 + 1) : s), 0);
  postingSearches.answered++;
  const found = index.topK(terms, phrases.map((p) => p.idf), seeds, stats, limit, slack);
  found.sort((a, b) => b.score - a.score);
  if (found.length <= limit) return tiesByKey(db, found);
  // The rows past the k-th and not tied with it are out; ties are broken by key.
  let to = limit;
  while (to < found.length && found[to].score === found[limit - 1].score) to++;
  return tiesByKey(db, found.slice(0, to)).slice(0, limit);
}

/**
 * Rows sorted by score, runs of equal scores ordered by key (read only when there are some; the
 * rows then carry their keys, which the caller need not read again).
 */
function tiesByKey(db: Db, rows: { rowId: number; score: number }[]): { rowId: number; score: number; key?: string }[] {
  if (rows.every((r, i) => i === 0 || rows[i - 1].score !== r.score)) return rows;
  const keys = new Map(
    (db.stmt('SELECT id, key FROM vectors WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(rows.map((f) => f.rowId))) as { id: number; key: string }[]).map((r) => [r.id, r.key]),
  );
  const keyed = rows.map((r) => ({ ...r, key: keys.get(r.rowId) }));
  return keyed.sort((a, b) => b.score - a.score || compareCodePoints(a.key ?? '', b.key ?? ''));
}
