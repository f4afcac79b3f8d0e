// The posting-lists thread of lexical-postings.ts: holds the large tables' lists and their rows'
// keys, built and kept current from its own read-only connection (WAL: it reads what is
// committed), and answers their BM25 top k off the event loop, with no read of the database per
// search. Messages are handled in order, so a search is answered only after every change sent
// before it has been read.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { Database } from './sqlite-driver.ts';
import { compareCodePoints } from '../../index/filter.ts';
import type { LexicalTokenizer } from '../api.ts';
import { BM25_K1, type Bm25Stats } from '../lexical/bm25.ts';
import { PostingIndex } from '../lexical/postings.ts';
import { seedPhrases, weigh } from '../lexical/prune.ts';
import { tokenize } from '../lexical/tokenize.ts';

/** A search's turn on the postings thread: `ms` long, once it has read at least `reads` postings (or rows). */
export type PostingsSlice = { ms: number; reads: number };

export interface PostingsData {
  file: string;
  /** How long a search runs, and how much it reads at least, before the searches that came after it get a turn (see `turns`). */
  slice: PostingsSlice;
}

export type PostingRow = { rowId: number; score: number; key: string };

/** A search's rows best first, as columns (the typed arrays are transferred, not copied). */
export interface PostingColumns {
  rowIds: Float64Array;
  scores: Float64Array;
  keys: string[];
}

/** Messages to the thread; `seq` numbers them in the order sent. */
export type ToPostings =
  | { type: 'build'; seq: number; table: number; generation: number; tokenizer: LexicalTokenizer }
  | { type: 'apply'; seq: number; table: number; ids: number[] }
  | { type: 'forget'; seq: number; table: number }
  | { type: 'search'; seq: number; table: number; terms: string[]; stats: Bm25Stats; limit: number };

/**
 * `applied`: the seq of the last message handled before the answer (at least the search's own);
 * `took`: when the thread began and ended the search (ms since the epoch, for a search's timeline).
 */
export type FromPostings =
  | { type: 'built'; table: number; generation: number }
  | { type: 'answer'; seq: number; applied: number; rows: PostingColumns | null; error?: string; took: [number, number] };

interface Lists {
  index: PostingIndex;
  tokenizer: LexicalTokenizer;
  generation: number;
  /** The last row id the build has read (rows are read in id order); null once built. */
  cursor: number | null;
}

/** Rows read per turn while building, so other tables' searches are answered between slices. */
const BUILD_SLICE = 5000;
/** Postings packed per turn when the lists are frozen (tens of ms), so searches are answered between slices. */
const FREEZE_SLICE = 1_000_000;
/** Past this share of dead documents (rewritten or deleted rows), the lists are built afresh. */
const MAX_DEAD = 0.5;

const port = parentPort!;
const db = new Database((workerData as PostingsData).file, { readonly: true, fileMustExist: true });
const tables = new Map<number, Lists>();
let applied = 0;

type TextRow = { id: number; key: string; text: string | null };
const slice = db.prepare('SELECT v.id, v.key, p.text FROM vectors v JOIN vector_payloads p ON p.id = v.id WHERE v.id > ? AND v.table_id = ? ORDER BY v.id LIMIT ?');
const byIds = db.prepare('SELECT v.id, v.key, p.text FROM vectors v JOIN vector_payloads p ON p.id = v.id WHERE v.table_id = ? AND v.id IN (SELECT value FROM json_each(?))');

function build(table: number, l: Lists): void {
  if (tables.get(table) !== l) return; // forgotten meanwhile
  const rows = slice.all(l.cursor, table, BUILD_SLICE) as TextRow[];
  for (const r of rows) l.index.set(r.id, r.text ? tokenize(l.tokenizer, r.text) : null, r.key);
  // Packed as they grow, so the plain arrays never hold more than a slice and an eighth.
  if (l.index.freezeDue) freeze(table, l);
  if (rows.length === BUILD_SLICE) {
    l.cursor = rows[rows.length - 1].id;
    setImmediate(() => build(table, l));
    return;
  }
  l.cursor = null;
  port.postMessage({ type: 'built', table, generation: l.generation } satisfies FromPostings);
}

/** Packs the lists into one typed array (PostingIndex.freezeStep), a slice per turn. */
function freeze(table: number, l: Lists): void {
  if (tables.get(table) !== l) return; // forgotten or rebuilt meanwhile
  turns.finish(table);
  if (!l.index.freezeStep(FREEZE_SLICE)) setImmediate(() => freeze(table, l));
}

function start(table: number, tokenizer: LexicalTokenizer, generation: number): void {
  const l: Lists = { index: new PostingIndex(), tokenizer, generation, cursor: 0 };
  tables.set(table, l);
  build(table, l);
}

/** Reads the rows again as committed now (a row read ahead of the build's cursor is read by it again: no harm). */
function apply(table: number, ids: number[]): void {
  const l = tables.get(table);
  if (l === undefined) return;
  if (l.cursor === null && ids.length > l.index.size / 2) return start(table, l.tokenizer, l.generation);
  const rows = new Map((byIds.all(table, JSON.stringify(ids)) as TextRow[]).map((r) => [r.id, r]));
  for (const id of ids) {
    const r = rows.get(id);
    l.index.set(id, r?.text ? tokenize(l.tokenizer, r.text) : null, r?.key);
  }
  if (l.cursor === null && l.index.deadShare > MAX_DEAD) return start(table, l.tokenizer, l.generation);
  if (l.index.freezeDue) freeze(table, l);
}

/**
 * The best `limit` rows for the terms (one token per query word, in query order) by BM25 with the
 * totals `stats`, ties by key, under prune.ts's seeding rule, in steps (see `turns`); null while the
 * lists are not built. The keys are the lists' own (read with the rows' texts): a row deleted since
 * the search was sent may be listed, and the caller's read of the rows drops it, as it drops any
 * row gone since.
 */
function* search(table: number, terms: string[], stats: Bm25Stats, limit: number): Generator<number, PostingColumns | null, void> {
  const l = tables.get(table);
  if (l === undefined || l.cursor !== null) return null;
  const index = l.index;
  const phrases = weigh(terms.map((t) => ({ phrase: [t], df: index.documentFrequency(t) })), stats.rows);
  const seeds = seedPhrases(phrases, stats.rows);
  if (seeds.length === 0) return columns([]);
  // The terms that bring no rows still add to a row's score: at most idf (k1 + 1) each.
  const slack = phrases.reduce((s, p, i) => (p.df > 0 && !seeds.includes(i) ? s + p.idf * (BM25_K1 + 1) : s), 0);
  const found = yield* index.topKSteps(terms, phrases.map((p) => p.idf), seeds, stats, limit, slack);
  // Each row comes with its key (this thread sets every row's with its tokens): ties are broken by it.
  const rows = found as PostingRow[];
  rows.sort((a, b) => b.score - a.score || compareCodePoints(a.key, b.key));
  return columns(rows.slice(0, limit));
}

/** Searches that may wait their turns at once (see `turns`). */
const MAX_WAITING = 8;

/** A search under way: its steps, and what its answer says. */
interface Turn {
  seq: number;
  table: number;
  /** The last message handled before the search began: every change sent before it. */
  applied: number;
  began: number;
  steps: Generator<number, PostingColumns | null, void>;
  /** Postings and rows it has read. */
  read: number;
}

/**
 * The searches under way, so that a long search (a query of the commonest words reads most of the
 * table's postings: ~0.15 s at 1,000,000 rows) does not hold up the searches sent after it, which
 * may be other tenants'. A search runs for `slice.ms` when it comes; if it is not done, it waits
 * its turn, and the searches waiting take turns of as long (at least a step of topKSteps: a list,
 * or ~1 ms of a long one), the messages that came meanwhile handled between turns. A search that
 * has read fewer than `slice.reads` postings is not stopped: on two busy cores its wall time may
 * pass the slice while it waits for a core, and stopping it then cost hybrid searches CPU. Nothing
 * changes a table's lists while a search of it waits (finish before each change), so every answer
 * is of the lists as they were when its search began.
 */
const turns = {
  waiting: [] as Turn[],
  scheduled: false,
  slice: (workerData as PostingsData).slice,

  start(seq: number, table: number, terms: string[], stats: Bm25Stats, limit: number): void {
    const turn: Turn = { seq, table, applied, began: clock(), steps: search(table, terms, stats, limit), read: 0 };
    // Each waiting search holds scratch arrays of 8 bytes a row: past MAX_WAITING, one runs to its end.
    if (!this.run(turn, this.waiting.length < MAX_WAITING ? this.slice.ms : Infinity)) this.wait(turn);
  },

  /** Runs the search for up to `ms` (at least a step, and `slice.reads`); answers whether it is done (and answered). */
  run(turn: Turn, ms: number): boolean {
    const until = performance.now() + ms;
    const least = turn.read + this.slice.reads;
    let rows: PostingColumns | null;
    try {
      for (;;) {
        const r = turn.steps.next();
        if (r.done === true) {
          rows = r.value;
          break;
        }
        turn.read = r.value;
        if (turn.read >= least && performance.now() >= until) return false;
      }
    } catch (e) {
      answer({ type: 'answer', seq: turn.seq, applied: turn.applied, rows: null, error: String(e), took: [turn.began, clock()] });
      return true;
    }
    answer({ type: 'answer', seq: turn.seq, applied: turn.applied, rows, took: [turn.began, clock()] });
    return true;
  },

  wait(turn: Turn): void {
    this.waiting.push(turn);
    this.schedule();
  },

  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.next());
  },

  /** A slice of the search first in line, which goes to the back if not done (the messages that came meanwhile were handled first). */
  next(): void {
    this.scheduled = false;
    const turn = this.waiting.shift();
    if (turn !== undefined && !this.run(turn, this.slice.ms)) this.waiting.push(turn);
    if (this.waiting.length > 0) this.schedule();
  },

  /** Ends the table's waiting searches now: before anything changes its lists. */
  finish(table: number): void {
    const ending = this.waiting.filter((t) => t.table === table);
    if (ending.length === 0) return;
    this.waiting = this.waiting.filter((t) => t.table !== table);
    for (const turn of ending) this.run(turn, Infinity);
  },
};

const clock = (): number => performance.timeOrigin + performance.now();

function answer(m: Extract<FromPostings, { type: 'answer' }>): void {
  port.postMessage(m, m.rows === null ? [] : [m.rows.rowIds.buffer as ArrayBuffer, m.rows.scores.buffer as ArrayBuffer]);
}

function columns(rows: PostingRow[]): PostingColumns {
  const out: PostingColumns = { rowIds: new Float64Array(rows.length), scores: new Float64Array(rows.length), keys: new Array<string>(rows.length) };
  rows.forEach((r, i) => {
    out.rowIds[i] = r.rowId;
    out.scores[i] = r.score;
    out.keys[i] = r.key;
  });
  return out;
}

port.on('message', (m: ToPostings) => {
  if (m.type !== 'search') turns.finish(m.table);
  applied = m.seq;
  if (m.type === 'build') return start(m.table, m.tokenizer, m.generation);
  if (m.type === 'apply') return apply(m.table, m.ids);
  if (m.type === 'forget') return void tables.delete(m.table);
  turns.start(m.seq, m.table, m.terms, m.stats, m.limit);
});
