/**
 * Exact search: usearch's SIMD `exactSearch` finds candidates per block in float32, then every
 * candidate is re-scored in float64 (`exactScore`), so answers match a brute-force scan.
 */
import { exactSearch, MetricKind } from 'usearch';
import { compareScores, exactScore, exactScores, type Metric } from './metric.ts';
import type { VectorBlock, VectorMatrix } from './matrix.ts';
import { TopK } from './topk.ts';
import type { RowSet } from './row-bitmap.ts';

export interface Scored {
  rowId: number;
  score: number;
}

/** The usearch metric whose distance orders rows as `metric` does. */
export function usearchMetric(metric: Metric): MetricKind {
  switch (metric) {
    case 'cosine':
      return MetricKind.Cos;
    case 'dot_product':
      return MetricKind.IP;
    case 'euclidean':
      return MetricKind.L2sq;
  }
}

/** The usearch distance for a score: cos -> 1 - similarity, ip -> 1 - dot, l2sq -> distance². */
export const scoreToDistance = (metric: Metric, score: number): number => (metric === 'euclidean' ? score * score : 1 - score);

/** Best first; equal scores by row id so answers are deterministic. */
export const compareScored = (metric: Metric): ((a: Scored, b: Scored) => number) => {
  const cmp = compareScores(metric);
  return (a, b) => cmp(a, b) || a.rowId - b.rowId;
};

/** usearch reads a query from its buffer's start; hand it one that starts there. */
const atOffsetZero = (q: Float32Array): Float32Array => (q.byteOffset === 0 ? q : q.slice());

/** Blocks no bigger than this are scored wholly in float64, without a usearch pass. */
const SCORE_ALL_BELOW = 256;

/**
 * The exact best `limit` rows of the blocks, best first.
 *
 * Per block, usearch returns k > limit candidates by float32 distance; they are re-scored in
 * float64. The block's answer is certain when its limit-th exact distance is below the k-th
 * float32 distance by more than float32 rounding could hide; otherwise k grows and the block is
 * searched again (this happens only around near-ties, e.g. duplicate vectors). Rows in `exclude`
 * (e.g. expired ones) are never answered; k also grows while they leave fewer than `limit`, and
 * starts as large as `excludedShare` (their expected share of a block) calls for.
 */
export function exactTopK(blocks: Iterable<VectorBlock>, query: Float32Array, metric: Metric, limit: number, exclude?: RowSet, excludedShare = 0): Scored[] {
  if (limit <= 0) return [];
  const d = query.length;
  const q = atOffsetZero(query);
  const kind = usearchMetric(metric);
  const cmp = compareScored(metric);
  const top = new TopK<Scored>(limit, cmp);
  const pad = Math.max(16, limit >> 2);
  // A zero query has cosine 0 with every row: all tie, so the answer is the lowest row ids
  // (and the float32 pass could never separate them).
  const zeroCosine = metric === 'cosine' && q.every((x) => x === 0);

  // Mostly excluded rows (a mass expiry before its sweep): score only the kept ones, packed, so
  // the excluded cost one membership test each instead of widening every block's candidates.
  const pack = exclude !== undefined && excludedShare >= PACK_ABOVE_SHARE;
  for (const { vectors, rowIds } of pack ? packKept(blocks, exclude, d) : blocks) {
    const n = rowIds.length;
    if (n === 0) continue;
    if (vectors.length !== n * d) throw new RangeError(`block of ${n} rows has ${vectors.length} values, expected dimension ${d}`);
    const score = (i: number): Scored => ({ rowId: rowIds[i], score: exactScore(metric, q, vectors.subarray(i * d, i * d + d)) });
    const kept = (i: number): boolean => pack || exclude === undefined || !exclude.has(rowIds[i]);

    if (zeroCosine) {
      for (let i = 0; i < n; i++) if (kept(i)) top.push({ rowId: rowIds[i], score: 0 });
      continue;
    }
    if (n <= Math.max(SCORE_ALL_BELOW, limit + pad)) {
      for (let i = 0; i < n; i++) if (kept(i)) top.push(score(i));
      continue;
    }
    const k0 = Math.min(n, Math.ceil((limit + pad) / Math.max(1 / 64, 1 - (pack ? 0 : excludedShare))));
    for (let k = k0; ; k = Math.min(n, k * 4)) {
      const found = exactSearch(vectors, q, d, k, kind, 0);
      const cands: Scored[] = [];
      let cutoff = -Infinity;
      for (let j = 0; j < k; j++) {
        const i = Number(found.keys[j]);
        if (kept(i)) cands.push(score(i));
        cutoff = Math.max(cutoff, found.distances[j]);
      }
      const certain = k === n || (cands.length >= limit && blockIsCertain(cands, metric, limit, cutoff));
      if (certain) {
        for (const c of cands) top.push(c);
        break;
      }
    }
  }
  return top.sorted();
}

/** From this share of excluded rows on, exactTopK packs the kept ones rather than over-fetching. */
const PACK_ABOVE_SHARE = 0.5;
const PACK_ROWS = 8_192;
/** packKept's scratch, kept across searches (a scan is synchronous, so one at a time uses it). */
let packVectors = new Float32Array(0);
const packIds = new Float64Array(PACK_ROWS);

/**
 * The blocks' rows not in `exclude`, copied into packed blocks of up to PACK_ROWS rows (one
 * scratch block, at offset 0 as usearch needs, reused: each is valid until the next is taken).
 */
function* packKept(blocks: Iterable<VectorBlock>, exclude: RowSet, d: number): IterableIterator<VectorBlock> {
  if (packVectors.length < PACK_ROWS * d) packVectors = new Float32Array(PACK_ROWS * d);
  const vectors = packVectors.subarray(0, PACK_ROWS * d);
  const ids = packIds;
  let m = 0;
  for (const b of blocks) {
    const n = b.rowIds.length;
    for (let i = 0; i < n; i++) {
      const id = b.rowIds[i];
      if (exclude.has(id)) continue;
      const from = i * d;
      const to = m * d;
      for (let j = 0; j < d; j++) vectors[to + j] = b.vectors[from + j];
      ids[m++] = id;
      if (m === PACK_ROWS) {
        yield { vectors, rowIds: ids };
        m = 0;
      }
    }
  }
  if (m > 0) yield { vectors: vectors.subarray(0, m * d), rowIds: ids.subarray(0, m) };
}

function blockIsCertain(cands: Scored[], metric: Metric, limit: number, cutoff: number): boolean {
  if (!Number.isFinite(cutoff)) return false;
  const kept = new TopK<Scored>(limit, compareScored(metric));
  for (const c of cands) kept.push(c);
  const best = kept.sorted();
  const worstKept = scoreToDistance(metric, best[best.length - 1].score);
  // float32 distances carry ~1e-7 relative error; 1e-5 leaves a wide margin.
  const tol = 1e-5 * Math.max(1, Math.abs(cutoff));
  return worstKept < cutoff - tol;
}

/** Exact float64 scores of the given rows (rows `get` lacks skipped, duplicates once), best `limit` first. */
export function rescore(query: Float32Array, rowIds: Iterable<number>, rows: Pick<VectorMatrix, 'get'>, metric: Metric, limit: number): Scored[] {
  const ids: number[] = [];
  const vectors: Float32Array[] = [];
  const seen = new Set<number>();
  for (const rowId of rowIds) {
    if (seen.has(rowId)) continue;
    seen.add(rowId);
    const v = rows.get(rowId);
    if (v === undefined) continue;
    ids.push(rowId);
    vectors.push(v);
  }
  const scores = new Float64Array(ids.length);
  exactScores(metric, query, vectors, scores);
  const top = new TopK<Scored>(limit, compareScored(metric));
  for (let i = 0; i < ids.length; i++) top.push({ rowId: ids[i], score: scores[i] });
  return top.sorted();
}

/** The exact best `limit` rows of the whole matrix, or of just `only` when given (e.g. a filter's rows), none of `exclude`. */
export function exactSearchMatrix(matrix: VectorMatrix, query: Float32Array, metric: Metric, limit: number, only?: Iterable<number>, exclude?: RowSet): Scored[] {
  const share = exclude === undefined || matrix.size === 0 ? 0 : Math.min(1, exclude.size / matrix.size);
  return exactTopK(only === undefined ? matrix.segments() : matrix.gather(only), query, metric, limit, exclude, share);
}
