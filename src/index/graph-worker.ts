/**
 * A second thread that searches some of a table's sealed graphs while the main thread searches the
 * others, so one query's graph walks use both cores (at 1M rows, four 250k-row graphs of ~1 ms a
 * walk: docs/PERFORMANCE.md). The worker memory-maps the same graph files itself (usearch objects
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
 *
 * Draft encoders (addDraft): a text query's vector comes from a model call of ~3.5 ms that holds
 * the main thread, and this thread would wait for it idle. Given a smaller copy of the model (an
 * int8 ONNX graph of the same architecture: token ids in, token vectors out, mean-pooled and
 * L2-normalised here as sentence-transformers does), a search can start from the query's token
 * ids instead: this thread encodes them with the draft (~half the time) and walks graphs with
 * that approximate vector while the main thread computes the exact one, then claims what is left.
 * Stage 2 re-scores every candidate with the exact vector, so a draft only chooses candidates,
 * as the graphs' compact copies of the rows already do.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { KEYS_AS_NUMBERS_JS } from './usearch-keys.ts';

export interface WorkerGraph {
  id: number;
  file: string;
  dimension: number;
  /** usearch's metric kind name (MetricKind value), and the graph's parameters. */
  metric: string;
  connectivity: number;
  expansionAdd: number;
  expansionSearch: number;
}

export interface WorkerResult {
  /** The graph's position in the list given to search(). */
  index: number;
  keys: Float64Array;
  distances: Float32Array;
}

export type WorkerAnswer = WorkerResult | { index: number; missing: true };

/** A search's start before its vector exists: token ids for a draft encoder (see addDraft). */
export interface DraftQuery {
  encoder: string;
  /** Token ids as the model sees them: special tokens included, truncated. */
  ids: Int32Array;
}

/** The claim counter a search shares with the worker (see claimGraph). */
export type GraphClaims = Int32Array;

export const newGraphClaims = (): GraphClaims => new Int32Array(new SharedArrayBuffer(4));

/** Takes the next graph of a shared search: its position, or -1 when all are taken. */
export function claimGraph(claims: GraphClaims, count: number): number {
  const i = Atomics.add(claims, 0, 1);
  return i < count ? i : -1;
}

/** Plain JS: it runs as is under tsx and inside the bundle alike. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { statSync } = require('node:fs');
const { Index } = require(workerData.usearch);
parentPort.postMessage({ type: 'loaded' });
const keysAsNumbers = ${KEYS_AS_NUMBERS_JS};
const open = new Map();
const owned = new Map();
const drafts = new Map();
let ort = null;
/** The draft encoder's vector for token ids: mean over tokens, L2-normalised; null if it cannot give one. */
async function encode(d, ids) {
  const n = ids.length;
  const dims = [1, n];
  const feeds = {};
  if (d.inputs.has('input_ids')) feeds.input_ids = new ort.Tensor('int64', BigInt64Array.from(ids, (x) => BigInt(x)), dims);
  if (d.inputs.has('attention_mask')) feeds.attention_mask = new ort.Tensor('int64', new BigInt64Array(n).fill(1n), dims);
  if (d.inputs.has('token_type_ids')) feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(n), dims);
  const out = (await d.session.run(feeds)).last_hidden_state;
  if (!out || out.dims.length !== 3 || out.dims[1] !== n || out.dims[2] !== d.dimension) return null;
  const h = out.data;
  const acc = new Float64Array(d.dimension);
  for (let t = 0; t < n; t++) for (let j = 0, o = t * d.dimension; j < d.dimension; j++) acc[j] += h[o + j];
  let norm = 0;
  for (let j = 0; j < d.dimension; j++) norm += acc[j] * acc[j];
  if (!(norm > 0)) return null;
  const scale = 1 / Math.sqrt(norm);
  return Float32Array.from(acc, (x) => x * scale);
}
async function addDraft(m) {
  try {
    ort ??= require(workerData.onnxruntime);
    const session = await ort.InferenceSession.create(m.file, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
    const d = { session, dimension: m.dimension, inputs: new Set(session.inputNames) };
    // One call now: a graph that does not give this dimension is refused here, not in a search.
    if (!(await encode(d, Int32Array.from(m.probe)))) throw new Error('it does not give ' + m.dimension + '-dimensional token vectors');
    drafts.set(m.name, d);
    parentPort.postMessage({ type: 'draft', name: m.name, ok: true });
  } catch (e) {
    parentPort.postMessage({ type: 'draft', name: m.name, ok: false, error: String(e && e.message || e) });
  }
}
function walk(m, query) {
  const results = [];
  const transfer = [];
  // The same claim as claimGraph() in the main thread.
  for (let i = Atomics.add(m.claims, 0, 1); i < m.ids.length; i = Atomics.add(m.claims, 0, 1)) {
    const index = open.get(m.ids[i]);
    if (!index) { results.push({ index: i, missing: true }); continue; }
    const r = index.search(query, Math.min(m.k, index.size()), 1);
    const keys = keysAsNumbers(r.keys);
    const distances = r.distances.slice();
    results.push({ index: i, keys, distances });
    transfer.push(keys.buffer, distances.buffer);
  }
  parentPort.postMessage({ seq: m.seq, results }, transfer);
}
parentPort.on('message', (m) => {
  if (m.type === 'draft') return void addDraft(m);
  if (m.type === 'sync') {
    const want = new Set(m.graphs.map((g) => g.id));
    for (const id of owned.get(m.owner) ?? []) if (!want.has(id)) open.delete(id);
    owned.set(m.owner, want);
    for (const g of m.graphs) {
      if (open.has(g.id)) continue;
      try {
        // No scalar kind: a viewed file brings its own (int8 or bf16, by table and age: ann.ts).
        const index = new Index({ dimensions: g.dimension, metric: g.metric, connectivity: g.connectivity, expansion_add: g.expansionAdd, expansion_search: g.expansionSearch, multi: false });
        // usearch 2.26's view of a file it cannot open closes descriptor 0, the process's stdin, and
        // the next descriptor opened there later aborts Node (libuv: "fd > STDERR_FILENO"). A
        // retired segment's file can be gone by the time it is synced here, so look first.
        statSync(g.file);
        index.view(g.file);
        // Map every page once, in order, rather than one fault at a time during searches.
        index.save('/dev/null');
        open.set(g.id, index);
      } catch {
        open.set(g.id, null);
      }
    }
    parentPort.postMessage({ type: 'synced', owner: m.owner, ready: [...want].filter((id) => open.get(id)) });
    return;
  }
  if (!m.draft) return walk(m, m.query);
  const d = drafts.get(m.draft.encoder);
  // No draft vector: claim nothing, so the caller walks every graph with the exact one.
  const none = () => parentPort.postMessage({ seq: m.seq, results: [] });
  if (!d) return none();
  encode(d, m.draft.ids).then((q) => (q ? walk(m, q) : none()), none);
});
`;

export class GraphWorker {
  #worker: Worker | null;
  #seq = 0;
  readonly #owners = new WeakMap<object, number>();
  #nextOwner = 1;
  /** Searches sent to the thread, and graphs it walked for them (for monitoring and tests). */
  searches = 0;
  walked = 0;
  /** Of the searches, those sent as a draft (see addDraft). */
  draftSearches = 0;
  readonly #waiting = new Map<number, { resolve: (r: WorkerAnswer[]) => void }>();
  #syncing = 0;
  /** Graph ids the thread has open, per owner (as of each owner's last finished sync), and all of them. */
  readonly #readyOf = new Map<number, number[]>();
  readonly #ready = new Set<number>();
  /** Settles once the thread has loaded usearch (or died): see close(). */
  readonly #loaded: Promise<void>;
  #markLoaded!: () => void;
  /** Draft encoders by name: loading, or ready (see addDraft). */
  readonly #drafts = new Map<string, { ready: boolean; settled: Promise<void>; settle: () => void; onLoad?: (error: string | null) => void }>();

  constructor() {
    const require = createRequire(import.meta.url);
    const usearch = require.resolve('usearch');
    const onnxruntime = require.resolve('onnxruntime-node');
    this.#loaded = new Promise((resolve) => (this.#markLoaded = resolve));
    this.#worker = new Worker(WORKER, { eval: true, workerData: { usearch, onnxruntime }, execArgv: [] });
    this.#worker.unref();
    this.#worker.on('message', (m: { type?: 'synced' | 'loaded' | 'draft'; owner: number; ready: number[]; seq: number; results: WorkerAnswer[]; name: string; ok: boolean; error?: string }) => {
      if (m.type === 'loaded') return this.#markLoaded();
      if (m.type === 'draft') {
        const d = this.#drafts.get(m.name);
        if (!d) return;
        if (m.ok) d.ready = true;
        else this.#drafts.delete(m.name);
        d.settle();
        d.onLoad?.(m.ok ? null : (m.error ?? 'unknown error'));
        return;
      }
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
      for (const d of this.#drafts.values()) d.settle();
      this.#drafts.clear();
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
    this.#worker.postMessage({ type: 'sync', owner: id, graphs });
  }

  /**
   * Loads a draft encoder on the thread: `file` is an ONNX graph taking input_ids (and
   * attention_mask, token_type_ids if it declares them) and giving last_hidden_state of
   * `dimension` per token. `probe` (token ids) is encoded once to check that. `onLoad` is told
   * null when it is ready, or why it is not (searches then go without it). One per name.
   */
  addDraft(name: string, file: string, dimension: number, probe: Int32Array, onLoad?: (error: string | null) => void): void {
    if (!this.#worker) return onLoad?.('the search thread is not running');
    if (this.#drafts.has(name)) return onLoad?.(`a draft encoder named ${name} is already given`);
    let settle!: () => void;
    const settled = new Promise<void>((r) => (settle = r));
    this.#drafts.set(name, { ready: false, settled, settle, onLoad });
    this.#worker.postMessage({ type: 'draft', name, file, dimension, probe: Array.from(probe) });
  }

  /** Whether draft encoder `name` is loaded. */
  hasDraft(name: string): boolean {
    return this.#drafts.get(name)?.ready === true;
  }

  /**
   * Searches the named graphs that it claims from `claims` (the caller claims the others with
   * claimGraph and walks them meanwhile). Resolves to one answer per graph it took: the result, or
   * `missing` for a graph it could not open, which the caller then walks itself. Resolves to []
   * if the worker is gone, having claimed nothing or having died mid-walk: graphs no answer covers
   * are the caller's to walk. Given a DraftQuery instead of a vector, the thread first encodes it
   * (see addDraft); if it cannot, it claims nothing.
   */
  search(ids: number[], query: Float32Array | DraftQuery, k: number, claims: GraphClaims): Promise<WorkerAnswer[]> {
    if (!this.#worker || ids.length === 0) return Promise.resolve([]);
    const seq = this.#seq++;
    this.searches++;
    const what = query instanceof Float32Array ? { query } : { draft: query };
    if (!(query instanceof Float32Array)) this.draftSearches++;
    return new Promise((resolve) => {
      this.#waiting.set(seq, { resolve });
      this.#worker!.postMessage({ type: 'search', seq, ids, k, claims, ...what });
    });
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
    // Likewise a draft encoder still being created (onnxruntime is a native module too).
    const loads = Promise.all([this.#loaded, ...[...this.#drafts.values()].map((d) => d.settled)]);
    await Promise.race([loads, new Promise((r) => setTimeout(r, 10_000).unref())]);
    await w.terminate();
  }
}
