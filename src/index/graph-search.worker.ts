// The search thread of graph-worker.ts: holds views of sealed graph files and walks the ones it
// claims for each search.
import { statSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
import type { Index } from 'usearch';
import { newNativeGraph } from './graph-params.ts';
import type { FromSearchThread, SearchMessage, ToSearchThread, WorkerAnswer } from './graph-worker.ts';
import { claimGraph } from './graph-claims.ts';
import { keysAsNumbers } from './usearch-keys.ts';

const port = parentPort!;
const send = (m: FromSearchThread, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);
/** Open graphs by id (null: could not be opened), and which ids each owner wants open. */
const open = new Map<number, Index | null>();
const owned = new Map<number, Set<number>>();

send({ type: 'loaded' });

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

function walk(m: SearchMessage): void {
  const query = m.query;
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
  if (m.type === 'sync') return sync(m);
  walk(m);
});
