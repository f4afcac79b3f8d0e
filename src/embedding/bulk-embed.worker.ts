// One bulk embedding thread of bulk-pool.ts: opens its own copy of a checked model at a lowered
// CPU priority, then embeds the batches it is sent, one at a time.
import { parentPort, workerData } from 'node:worker_threads';
import { lowerThisThreadPriority } from '../platform/thread-priority.ts';
import type { BulkWorkerData, FromBulkWorker, ToBulkWorker } from './bulk-pool.ts';
import { openCheckedModel, type EmbeddingModel } from './model.ts';

const port = parentPort!;
const data = workerData as BulkWorkerData;
const send = (m: FromBulkWorker, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

// Before the session exists, so that its own threads (intra-op > 1) inherit the priority too.
if (data.nice > 0) lowerThisThreadPriority(data.nice);

let model: EmbeddingModel;
try {
  model = await openCheckedModel(data.modelDir, data.name, { threads: data.threads, callTokens: data.callTokens, callAttention: data.callAttention, callRows: data.callRows });
  send({ type: 'ready' });
} catch (e) {
  send({ type: 'failed', error: String((e as Error)?.message ?? e) });
  process.exit(1);
}

port.on('message', async (m: ToBulkWorker) => {
  try {
    const { vectors, tokens } = await model.embed(m.texts);
    const flat = new Float32Array(vectors.length * model.dimension);
    vectors.forEach((v, i) => flat.set(v, i * model.dimension));
    send({ type: 'done', id: m.id, vectors: flat, tokens: Int32Array.from(tokens) }, [flat.buffer]);
  } catch (e) {
    send({ type: 'error', id: m.id, error: String((e as Error)?.message ?? e) });
  }
});
