/**
 * The embedded backend's in-memory posting lists (storage/lexical/postings.ts), one per large table
 * (postingListsFromRows) searched lexically: what answers its unfiltered BM25 top k, FTS5 staying the durable index. They
 * live in a thread of their own (lexical-postings.worker.ts), so a hybrid search's lexical list is
 * scored there while the semantic one is found here and on the graph thread.
 *
 * They are derived from the committed rows only. A table's lists are built on its first lexical
 * search (searches use FTS5 until the thread says they are built). Writes only note the row ids they
 * touch (inside their transaction, which may yet roll back); once it is over (a later turn, or the
 * next search, whichever comes first) the ids are sent and the thread reads those rows again as
 * committed, from its own connection. Messages are handled in order and a search is sent after the
 * ids of every write before it, so a write acknowledged before a search began is in its answer (the
 * answer's `applied` sequence number says so, and is checked).
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';
import type { LexicalTokenizer } from '../api.ts';
import type { Bm25Stats } from '../lexical/bm25.ts';
import { startWorker } from '../../platform/worker-url.ts';
import type { FromPostings, PostingColumns, PostingRow, PostingsData, PostingsSlice, ToPostings } from './lexical-postings.worker.ts';
import type { Db, Sqlite } from './sql.ts';

export type { PostingsSlice };

/** The thread's answer to a request. */
type Answer = Exclude<FromPostings, { type: 'built' }>;

/** A message before #send numbers it (Omit of each member of the union). */
type Unnumbered<T> = T extends unknown ? Omit<T, 'seq'> : never;

interface Lists {
  tokenizer: LexicalTokenizer;
  /** Tells this build's 'built' from an earlier one's. */
  generation: number;
  built: boolean;
  /** Rows written or deleted since their ids were last sent. */
  pending: Set<number>;
  scheduled: boolean;
}

/** One search's times (ms since the epoch): sent, begun and ended on the thread, its answer handled here. */
export type PostingsTimeline = { sent: number; began: number; ended: number; handled: number };

/**
 * Searches the lists answered, in this process (tests check which path answered),
 * and the last search's timeline (bench/hybrid-profile.ts).
 */
export const postingSearches: { answered: number; last: PostingsTimeline | null } = { answered: 0, last: null };

const clock = (): number => performance.timeOrigin + performance.now();

/** The posting-lists thread of one database, started on the first lexical search of a large table. */
export class PostingsThread {
  readonly #file: string;
  readonly #fromRows: number;
  readonly #slice: PostingsSlice;
  #worker: Worker | null = null;
  /** Set when the thread failed: searches use FTS5 from then on. */
  #failed = false;
  #closed = false;
  #seq = 0;
  #generation = 0;
  readonly #tables = new Map<number, Lists>();
  /** Searches sent, each settled with the thread's answer, or null when it could not answer. */
  readonly #waiting = new Map<number, { settle: (m: Answer | null) => void; after: number }>();

  constructor(file: string, fromRows: number, slice: PostingsSlice) {
    this.#file = file;
    this.#fromRows = fromRows;
    this.#slice = slice;
  }

  #send(m: Unnumbered<ToPostings>): number {
    const seq = ++this.#seq;
    this.#thread()?.postMessage({ ...m, seq });
    return seq;
  }

  #thread(): Worker | null {
    if (this.#failed || this.#closed) return null;
    if (this.#worker !== null) return this.#worker;
    const worker = startWorker('storage/embedded/lexical-postings.worker', { workerData: { file: this.#file, slice: this.#slice } satisfies PostingsData });
    worker.unref();
    worker.on('message', (m: FromPostings) => {
      if (m.type === 'built') {
        const l = [...this.#tables.values()].find((x) => x.generation === m.generation);
        if (l !== undefined) l.built = true;
        return;
      }
      const w = this.#waiting.get(m.seq);
      if (w === undefined) return;
      this.#waiting.delete(m.seq);
      // Never an answer from lists that lack a change sent before the request (handled in order: a bug if so).
      w.settle(m.error === undefined && m.applied >= w.after ? m : null);
    });
    const fail = () => {
      this.#failed = true;
      this.#worker = null;
      this.#tables.clear();
      for (const w of this.#waiting.values()) w.settle(null);
      this.#waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    return (this.#worker = worker);
  }

  /** Whether the table's lists are built and answer its lexical searches. */
  built(tableId: number): boolean {
    return this.#worker !== null && this.#tables.get(tableId)?.built === true;
  }

  /** Forgets a table's lists (its index was created anew: the id may be reused). */
  forget(tableId: number): void {
    if (this.#tables.delete(tableId)) this.#send({ type: 'forget', table: tableId });
  }

  /** Notes rows written or deleted (inside their transaction); they are sent once it is over. */
  touched(tableId: number, ids: readonly number[]): void {
    const l = this.#tables.get(tableId);
    if (l === undefined) return;
    for (const id of ids) l.pending.add(id);
    if (l.scheduled) return;
    l.scheduled = true;
    setImmediate(() => this.#flush(tableId, l));
  }

  #flush(tableId: number, l: Lists): void {
    l.scheduled = false;
    if (l.pending.size === 0 || this.#tables.get(tableId) !== l) return;
    const ids = [...l.pending];
    l.pending.clear();
    this.#send({ type: 'apply', table: tableId, ids });
  }

  /**
   * The best `limit` rows for the terms by BM25 with the totals `stats` (see the thread's search),
   * from the thread; null when the table is small, when its lists are not built (then the build is
   * started) or the thread cannot answer: the caller asks FTS5.
   */
  search(tableId: number, tokenizer: LexicalTokenizer, terms: readonly string[], stats: Bm25Stats, limit: number): Promise<PostingRow[] | null> | null {
    if (stats.rows < this.#fromRows || this.#thread() === null) return null;
    let l = this.#tables.get(tableId);
    if (l !== undefined && l.tokenizer !== tokenizer) this.forget(tableId), (l = undefined);
    if (l === undefined) {
      this.#tables.set(tableId, (l = { tokenizer, generation: ++this.#generation, built: false, pending: new Set(), scheduled: false }));
      this.#send({ type: 'build', table: tableId, generation: l.generation, tokenizer });
      return null;
    }
    if (!l.built) return null;
    const sent = clock();
    return this.#ask(tableId, l, { type: 'search', table: tableId, terms: [...terms], stats, limit }).then((m) => {
      if (m?.type !== 'answer' || m.rows === null) return null;
      postingSearches.answered++;
      postingSearches.last = { sent, began: m.took[0], ended: m.took[1], handled: clock() };
      return rowsOf(m.rows);
    });
  }

  /** Sends a request after the rows written before it, and its answer once the thread has read them. */
  #ask(tableId: number, l: Lists, m: Unnumbered<ToPostings>): Promise<Answer | null> {
    this.#flush(tableId, l);
    const after = this.#seq;
    const seq = this.#send(m);
    return new Promise<Answer | null>((settle) => this.#waiting.set(seq, { settle, after }));
  }

  async close(): Promise<void> {
    this.#closed = true;
    const w = this.#worker;
    this.#worker = null;
    if (w !== null) await w.terminate();
  }
}

const rowsOf = (c: PostingColumns): PostingRow[] => c.keys.map((key, i) => ({ rowId: c.rowIds[i], score: c.scores[i], key }));

const threads = new WeakMap<Sqlite, PostingsThread>();

/**
 * How long the thread runs a search before the searches sent after it get a turn (once it has read
 * 65,536 postings or rows, ~0.5 ms of work): a search of the commonest words takes ~0.15 s at
 * 1,000,000 rows, most of the bench's queries under 1 ms (PERFORMANCE.md).
 */
export const SEARCH_SLICE: PostingsSlice = { ms: 2, reads: 1 << 16 };

/** Gives the database (its file) a posting-lists thread; close it with the store. */
export function attachPostings(db: Sqlite, dataDir: string, fromRows: number, slice = SEARCH_SLICE): PostingsThread {
  const t = new PostingsThread(path.join(dataDir, 'vss.db'), fromRows, slice);
  threads.set(db, t);
  return t;
}

/** Forgets a table's lists (its index was created anew: the id may be reused). */
export function forgetPostings(db: Sqlite, tableId: number): void {
  threads.get(db)?.forget(tableId);
}

/** Notes rows written or deleted (inside their transaction); they are read again once it is over. */
export function postingsTouched(db: Db, tableId: number, ids: readonly number[]): void {
  threads.get(db.raw)?.touched(tableId, ids);
}

/** See PostingsThread.search; null also where the database has no thread. */
export function searchPostings(db: Db, tableId: number, tokenizer: LexicalTokenizer, terms: readonly string[], stats: Bm25Stats, limit: number): Promise<PostingRow[] | null> | null {
  return threads.get(db.raw)?.search(tableId, tokenizer, terms, stats, limit) ?? null;
}
