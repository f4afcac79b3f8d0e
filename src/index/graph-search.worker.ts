// The search thread of graph-worker.ts: holds views of sealed graph files and walks the ones it
// claims for each search; with a draft encoder, first encodes the query's token ids.
import { statSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import type { Index } from 'usearch';
import type { InferenceSession } from 'onnxruntime-node';
import { encodeTokenIds } from '../platform/sentence-encoder.ts';
import { newNativeGraph } from './graph-params.ts';
import type { FromSearchThread, SearchMessage, ToSearchThread, WorkerAnswer } from './graph-worker.ts';
import { claimGraph } from './graph-claims.ts';
import { keysAsNumbers } from './usearch-keys.ts';

interface Draft {
  session: InferenceSession;
  dimension: number;
}

const port = parentPort!;
const send = (m: FromSearchThread, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);
/** Open graphs by id (null: could not be opened), and which ids each owner wants open. */
const open = new Map<number, Index | null>();
const owned = new Map<number, Set<number>>();
const drafts = new Map<string, Draft>();
/** onnxruntime, loaded with the first draft encoder: a thread without one never loads it. */
let ort: typeof import('onnxruntime-node') | null = null;

send({ type: 'loaded' });

async function addDraft(m: Extract<ToSearchThread, { type: 'draft' }>): Promise<void> {
  try {
    ort ??= await import('onnxruntime-node');
    const session = await ort.InferenceSession.create(m.file, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
    const d = { session, dimension: m.dimension };
    // One call now: a graph that does not give this dimension is refused here, not in a search.
    if (!(await encode(d, Int32Array.from(m.probe)))) throw new Error(`it does not give ${m.dimension}-dimensional token vectors`);
    drafts.set(m.name, d);
    send({ type: 'draft', name: m.name, ok: true });
  } catch (e) {
    send({ type: 'draft', name: m.name, ok: false, error: String((e as Error)?.message ?? e) });
  }
}

const encode = (d: Draft, ids: Int32Array): Promise<Float32Array | null> => encodeTokenIds(ort!.Tensor, d.session, d.dimension, ids);

function sync(m: Extract<ToSearchThread, { type: 'sync' }>): void {
  const want = new Set(m.graphs.map((g) => g.id));
  for (const id of owned.get(m.owner) ?? []) if (!want.has(id)) open.delete(id);
  owned.set(m.owner, want);
  for (const g of m.graphs) {
    if (open.has(g.id)) continue;
    try {
      const index = newNativeGraph(g.dimension, g.metric);
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
  send({ type: 'synced', owner: m.owner, ready: [...want].filter((id) => open.get(id)) });
}

function walk(m: SearchMessage, query: Float32Array): void {
  const results: WorkerAnswer[] = [];
  const transfer: ArrayBuffer[] = [];
  for (let i = claimGraph(m.claims, m.ids.length); i >= 0; i = claimGraph(m.claims, m.ids.length)) {
    const index = open.get(m.ids[i]);
    if (!index) {
      results.push({ index: i, missing: true });
      continue;
    }
    const r = index.search(query, Math.min(m.k, index.size()), 1);
    const keys = keysAsNumbers(r.keys);
    const distances = r.distances.slice();
    results.push({ index: i, keys, distances });
    transfer.push(keys.buffer as ArrayBuffer, distances.buffer as ArrayBuffer);
  }
  send({ type: 'answer', seq: m.seq, results }, transfer);
}

port.on('message', (m: ToSearchThread) => {
  if (m.type === 'draft') return void addDraft(m);
  if (m.type === 'sync') return sync(m);
  if (m.query) return walk(m, m.query);
  // No draft vector: claim nothing, so the caller walks every graph with the exact one.
  const none = () => send({ type: 'answer', seq: m.seq, results: [] });
  const d = drafts.get(m.draft.encoder);
  if (!d) return none();
  encode(d, m.draft.ids).then((q) => (q ? walk(m, q) : none()), none);
});
