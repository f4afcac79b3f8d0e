import type { Metric } from './api.ts';

/** A metric in float64, written independently of the backends' code: what the contract cases check scores against. */
export function bruteScore(metric: Metric, a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  let l2 = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
    l2 += (a[i] - b[i]) ** 2;
  }
  if (metric === 'euclidean') return Math.sqrt(l2);
  if (metric === 'dot_product') return dot;
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
