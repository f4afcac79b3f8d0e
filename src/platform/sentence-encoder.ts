/**
 * What running a sentence-transformers ONNX graph takes besides the graph (embedding/model.ts):
 * the int64 inputs a graph declares, and mean pooling with L2 normalisation.
 */
import type { Tensor } from 'onnxruntime-node';

/** A BERT-style encoder's inputs, each batch × sequence int64 values. */
export interface EncoderInputs {
  input_ids: BigInt64Array;
  attention_mask: BigInt64Array;
  token_type_ids: BigInt64Array;
}

/**
 * The feeds for a graph that declares `declared` inputs: only those (a model without
 * token_type_ids is fine), as tensors of `dims` made with onnxruntime's `TensorClass`.
 */
export function encoderFeeds(TensorClass: typeof Tensor, declared: ReadonlySet<string>, inputs: EncoderInputs, dims: readonly number[]): Record<string, Tensor> {
  const feeds: Record<string, Tensor> = {};
  for (const [name, data] of Object.entries(inputs)) if (declared.has(name)) feeds[name] = new TensorClass('int64', data, dims);
  return feeds;
}

/** Mean over each row's first `lengths[b]` positions (right padding), then L2 normalisation. */
export function meanPoolNormalize(data: Float32Array, batch: number, seq: number, dim: number, lengths: number[]): Float32Array[] {
  const out: Float32Array[] = [];
  const acc = new Float64Array(dim);
  for (let b = 0; b < batch; b++) {
    acc.fill(0);
    const n = lengths[b];
    let base = b * seq * dim;
    for (let t = 0; t < n; t++, base += dim) {
      for (let d = 0; d < dim; d++) acc[d] += data[base + d];
    }
    let norm = 0;
    for (let d = 0; d < dim; d++) {
      acc[d] /= Math.max(n, 1e-9);
      norm += acc[d] * acc[d];
    }
    const scale = 1 / Math.max(Math.sqrt(norm), 1e-12);
    const v = new Float32Array(dim);
    for (let d = 0; d < dim; d++) v[d] = acc[d] * scale;
    out.push(v);
  }
  return out;
}
