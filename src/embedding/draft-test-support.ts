/**
 * Tests only: what a draft encoder gives token ids, computed the way the search worker does
 * (index/graph-search.worker.ts), with the same code (sentence-encoder.ts).
 */
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { encodeTokenIds } from '../platform/sentence-encoder.ts';

export async function draftVectors(file: string, dimension: number, idsList: Int32Array[]): Promise<Float32Array[]> {
  const session = await InferenceSession.create(file, { intraOpNumThreads: 1 });
  try {
    const out: Float32Array[] = [];
    for (const ids of idsList) {
      const v = await encodeTokenIds(Tensor, session, dimension, ids);
      if (!v) throw new Error(`${file} gives no ${dimension}-dimensional vector`);
      out.push(v);
    }
    return out;
  } finally {
    await session.release();
  }
}
