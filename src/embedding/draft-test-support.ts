/**
 * Tests only: what a draft encoder gives token ids, computed the way the search worker does
 * (index/graph-worker.ts): the graph's token vectors, mean-pooled and L2-normalised as the model's
 * are (meanPoolNormalize).
 */
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { meanPoolNormalize } from './model.ts';

export async function draftVectors(file: string, dimension: number, idsList: Int32Array[]): Promise<Float32Array[]> {
  const session = await InferenceSession.create(file, { intraOpNumThreads: 1 });
  try {
    const out: Float32Array[] = [];
    for (const ids of idsList) {
      const n = ids.length;
      const { last_hidden_state: h } = await session.run({
        input_ids: new Tensor('int64', BigInt64Array.from(ids, (x) => BigInt(x)), [1, n]),
        attention_mask: new Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
        token_type_ids: new Tensor('int64', new BigInt64Array(n), [1, n]),
      });
      out.push(meanPoolNormalize(h.data as Float32Array, 1, n, dimension, [n])[0]);
    }
    return out;
  } finally {
    await session.release();
  }
}
