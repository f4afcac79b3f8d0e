/**
 * Maximal marginal relevance (Carbonell & Goldstein, 1998), for `mmr` in a search: re-picks
 * the page from a larger set of candidates so that ten near-copies of one paragraph do not fill
 * it. Each pick maximises (1 − diversity)·relevance − diversity·(its highest cosine similarity
 * to a row already picked), as Qdrant's `diversity` does.
 */
import { exactScore } from '../index/metric.ts';

/**
 * Picks `limit` items in order (fewer when there are fewer); relevance as given (higher better,
 * any scale: min-max normalised inside, so it weighs against similarities in [−1, 1]),
 * similarity = cosine of the vectors; diversity 0 = pure relevance order, 1 = most diverse
 * (after the most relevant first). Ties go to the more relevant, then the earlier item.
 * Returns indexes into items.
 */
export function mmr(items: readonly { relevance: number; vector: Float32Array }[], opts: { diversity: number; limit: number }): number[] {
  const n = items.length;
  const limit = Math.max(0, Math.min(opts.limit, n));
  const { diversity } = opts;
  const relevance = normalised(items.map((it) => it.relevance));
  // Unit vectors once, so each similarity after is one dot product.
  const units = items.map((it) => unit(it.vector));
  // Each candidate's highest similarity to the picks so far (none yet: no penalty).
  const nearestPick = new Float64Array(n);
  const picked = new Uint8Array(n);
  const order: number[] = [];
  while (order.length < limit) {
    let best = -1;
    let bestValue = -Infinity;
    for (let i = 0; i < n; i++) {
      if (picked[i]) continue;
      const value = (1 - diversity) * relevance[i]! - diversity * nearestPick[i]!;
      if (value > bestValue || (value === bestValue && relevance[i]! > relevance[best]!)) {
        best = i;
        bestValue = value;
      }
    }
    if (best < 0) break; // only NaN relevances left
    picked[best] = 1;
    order.push(best);
    for (let i = 0; i < n; i++) {
      if (picked[i]) continue;
      const similarity = exactScore('dot_product', units[i]!, units[best]!);
      nearestPick[i] = order.length === 1 ? similarity : Math.max(nearestPick[i]!, similarity);
    }
  }
  return order;
}

function normalised(values: number[]): number[] {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return max > min ? values.map((v) => (v - min) / (max - min)) : values.map(() => 1);
}

function unit(v: Float32Array): Float32Array {
  const norm = Math.sqrt(exactScore('dot_product', v, v));
  // A zero vector is like nothing else: its similarities are 0.
  return norm === 0 ? new Float32Array(v.length) : v.map((x) => x / norm);
}
