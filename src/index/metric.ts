/**
 * Similarity metrics: names, aliases, exact scoring and ordering. Pure functions on vectors.
 * `score` is the metric's own value: cosine similarity, dot product, or Euclidean distance.
 */
export const METRICS = ['cosine', 'dot_product', 'euclidean'] as const;
export type Metric = (typeof METRICS)[number];

const ALIASES: Record<string, Metric> = {
  cosine: 'cosine',
  'cosine similarity': 'cosine',
  cosine_similarity: 'cosine',
  dot_product: 'dot_product',
  dot: 'dot_product',
  euclidean: 'euclidean',
  l2: 'euclidean',
};

export const METRIC_NAMES: readonly string[] = Object.keys(ALIASES);

/** The canonical metric for a name or alias (case-insensitive), or null. */
export function parseMetric(name: string): Metric | null {
  return ALIASES[name.trim().toLowerCase()] ?? null;
}

/** True when a larger score is better (similarities); false for distances. */
export const higherIsBetter = (m: Metric): boolean => m !== 'euclidean';

/** Exact score in float64 arithmetic over float32 inputs. */
export function exactScore(metric: Metric, a: Float32Array, b: Float32Array): number {
  const n = a.length;
  if (metric === 'euclidean') {
    let s = 0;
    for (let i = 0; i < n; i++) {
      const d = a[i] - b[i];
      s += d * d;
    }
    return Math.sqrt(s);
  }
  let dot = 0;
  if (metric === 'dot_product') {
    for (let i = 0; i < n; i++) dot += a[i] * b[i];
    return dot;
  }
  let na = 0;
  let nb = 0;
  for (let i = 0; i < n; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Comparator that sorts best first. */
export const compareScores =
  (metric: Metric) =>
  (x: { score: number }, y: { score: number }): number =>
    higherIsBetter(metric) ? y.score - x.score : x.score - y.score;
