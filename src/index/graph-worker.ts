/**
 * A second thread that searches some of a table's sealed graphs while the main thread searches the
 * others, so one query's graph walks use both cores (at 1M rows, four 250k-row graphs of ~1 ms a
 * walk: bench/vectors.bench.ts --n 1000000). The worker memory-maps the same graph files itself (usearch objects
 * cannot cross threads; the page cache is shared), so it never sees a graph before its file is
 * complete.
 *
 * A search shares its graphs with the caller through a claim counter in shared memory: each
 * thread takes the next unclaimed graph until none is left (the caller stops at half while the
 * worker has other searches queued: see SegmentedAnn.searchAsync). So when the worker wakes late or
 * is descheduled, the main thread walks the graphs it has not started instead of waiting for it.
 *
 * Messages are handled in order: `sync` (which files to have open) before any `search` that
 * names them. A worker that fails is not restarted; callers search everything themselves then.
 */
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../platform/worker-url.ts';
import type { GraphClaims } from './graph-claims.ts';
import type { Metric } from './metric.ts';

/** A sealed graph file the thread should have open (parameters as newNativeGraph gives them). */
export interface WorkerGraph {
  id: number;
  file: string;
  dimension: number;
  metric: Metric;
}

export interface WorkerResult {
  /** The graph's position in the list given to search(). */
  index: number;
  keys: Float64Array;
  distances: Float32Array;
}

export type WorkerAnswer = WorkerResult | { index: number; missing: true };

/** A search sent to the thread: the graphs (by id) it may claim, and the query's vector. */
export type SearchMessage = { type: 'search'; seq: number; ids: number[]; k: number; claims: GraphClaims; query: Float32Array };

/** Messages to the search thread (graph-search.worker.ts), handled in order. */
export type ToSearchThread =
  | { type: 'sync'; owner: number; graphs: WorkerGraph[] }
  | SearchMessage;

/** Messages from the search thread. */
export type FromSearchThread =
  | { type: 'loaded' }
  | { type: 'synced'; owner: number; ready: number[] }
  | { type: 'answer'; seq: number; results: WorkerAnswer[] };

export class GraphWorker {
  #worker: Worker | null;
  #seq = 0;
  readonly #owners = new WeakMap<object, number>();
  #nextOwner = 1;
  /** Searches sent to the thread, and graphs it walked for them (for monitoring and tests). */
  searches = 0;
  walked = 0;
  readonly #waiting = new Map<number, { resolve: (r: WorkerAnswer[]) => void }>();
  #syncing = 0;
  /** Graph ids the thread has open, per owner (as of each owner's last finished sync), and all of them. */
  readonly #readyOf = new Map<number, number[]>();
  readonly #ready = new Set<number>();
  /** Settles once the thread has loaded usearch (or died): see close(). */
  readonly #loaded: Promise<void>;
  #markLoaded!: () => void;

  constructor() {
    this.#loaded = new Promise((resolve) => (this.#markLoaded = resolve));
    this.#worker = startWorker('index/graph-search.worker');
    this.#worker.unref();
    this.#worker.on('message', (m: FromSearchThread) => {
      if (m.type === 'loaded') return this.#markLoaded();
      if (m.type === 'synced') {
        this.#syncing--;
        for (const id of this.#readyOf.get(m.owner) ?? []) this.#ready.delete(id);
        this.#readyOf.set(m.owner, m.ready);
        for (const id of m.ready) this.#ready.add(id);
        return;
      }
      const w = this.#waiting.get(m.seq);
      this.#waiting.delete(m.seq);
      for (const r of m.results) if (!('missing' in r)) this.walked++;
      w?.resolve(m.results);
    });
    const fail = () => {
      this.#markLoaded();
      this.#worker = null;
      for (const w of this.#waiting.values()) w.resolve([]);
      this.#waiting.clear();
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', fail);
  }

  get alive(): boolean {
    return this.#worker !== null;
  }

  /**
   * Whether the thread has a sync under way. It maps and reads through new graphs then (~75 ms a
   * 250k-row graph), and searches sent meanwhile would wait behind it: callers search locally.
   */
  get syncing(): boolean {
    return this.#syncing > 0;
  }

  /** Searches sent to the thread and not answered yet. */
  get pending(): number {
    return this.#waiting.size;
  }

  /** Whether the thread has this graph open and read through (as of its last finished sync). */
  isReady(id: number): boolean {
    return this.#ready.has(id);
  }

  /** The graphs the worker should have open for `owner` (its others are closed). */
  sync(owner: object, graphs: WorkerGraph[]): void {
    let id = this.#owners.get(owner);
    if (id === undefined) this.#owners.set(owner, (id = this.#nextOwner++));
    if (!this.#worker) return;
    this.#syncing++;
    this.#post({ type: 'sync', owner: id, graphs });
  }

  /**
   * Searches the named graphs that it claims from `claims` (the caller claims the others with
   * claimGraph and walks them meanwhile). Resolves to one answer per graph it took: the result, or
   * `missing` for a graph it could not open, which the caller then walks itself. Resolves to []
   * if the worker is gone, having claimed nothing or having died mid-walk: graphs no answer covers
   * are the caller's to walk.
   */
  search(ids: number[], query: Float32Array, k: number, claims: GraphClaims): Promise<WorkerAnswer[]> {
    if (!this.#worker || ids.length === 0) return Promise.resolve([]);
    const seq = this.#seq++;
    this.searches++;
    return new Promise((resolve) => {
      this.#waiting.set(seq, { resolve });
      this.#post({ type: 'search', seq, ids, k, claims, query });
    });
  }

  #post(m: ToSearchThread): void {
    this.#worker?.postMessage(m);
  }

  async close(): Promise<void> {
    const w = this.#worker;
    this.#worker = null;
    for (const x of this.#waiting.values()) x.resolve([]);
    this.#waiting.clear();
    if (!w) return;
    // Stopped while it was still loading usearch, the thread's native module met a dying
    // environment and threw a C++ exception nothing catches: the whole process aborted
    // ("terminate called after throwing an instance of 'Napi::Error'", once in a CI run of a test
    // that opens and closes storage at once). So it is stopped only once loaded, or after 10 s.
    await Promise.race([this.#loaded, new Promise((r) => setTimeout(r, 10_000).unref())]);
    await w.terminate();
  }
}
