/**
 * The parameters of a table's graphs (ann.ts), apart from the graphs so that the search thread
 * (graph-search.worker.ts) opens its views the same way while loading only usearch.
 */
import { Index, ScalarKind } from 'usearch';
import { usearchMetric } from './exact.ts';
import type { Metric } from './metric.ts';

/**
 * The narrowest walk of any search: usearch walks with max(expansion_search, results asked), so
 * a graph's expansion_search is only this floor and SegmentedAnn asks for as many results as the
 * walk should be wide (its effort, or a search's own `ef`).
 */
export const MIN_WALK = 16;

/**
 * Graph parameters. usearch searches with max(expansion_search, k), so asking for more than
 * expansion_search candidates widens the search by itself: SegmentedAnn does that to spend more
 * effort per graph when a table has fewer graphs. Measured on clustered data with heavy noise
 * (a hard case: 64 centres, uniform noise 0.6, 384-d: bench/workload.ts's generator), recall@10
 * after re-scoring the best 100 candidates of one 250k-row graph built in one go (200 queries,
 * a throwaway script, 2 cores; walk p50 in brackets):
 *
 *   connectivity 16, expansion_add 64: 0.84 / 0.88 / 0.92 / 0.95 at effort 96 / 128 / 192 / 256
 *     (0.42 / 0.51 / 0.60 / 0.76 ms), built in 34 s;
 *   connectivity 32, expansion_add 96: 0.97 / 0.98 / 0.99 / 1.00 (0.61 / 0.69 / 0.89 / 0.90 ms),
 *     built in 50 s.
 *
 * The denser graph reaches the same neighbours in far fewer steps on this data, so at equal
 * recall a walk is cheaper; the price is ~1.5× the build time and 128 more bytes of links a row.
 * Bigger graphs search worse at the same effort (one 1M-row graph of the first kind: 0.86 at
 * 512), which is why a table's index is several 250k-row segments (ann-segments.ts).
 */
export const ANN_PARAMS = Object.freeze({ connectivity: 32, expansionAdd: 96, expansionSearch: MIN_WALK });

/**
 * The scalar kind of a graph's row copies for a table of `metric`. Measured on a 250k-row graph of
 * the bench's clustered 384-d data (300 queries, one thread; the run is in
 * `git show 643e4a9:docs/PERFORMANCE.md`): a walk at effort 128 took 1.29 ms with int8 copies against 1.58 ms with bfloat16 on an AVX2 machine, 0.47 against 0.53 ms on an AVX-512 one; recall@10
 * after re-scoring 100 candidates 0.965 against 0.969 and 0.970 against 0.981. The file is 660
 * instead of 1,044 bytes a row. Fewer candidates do not turn it round: on a 100k-row graph of the
 * same data (one thread, AVX-512, a throwaway script), recall@10 ~0.975 cost 0.31 ms a search
 * with int8 (50 candidates, effort 64) against 0.34 ms with bfloat16 (20 or 10 candidates at 64),
 * walk and exact re-scoring included; float16 and float32 were slower still.
 */
export function graphQuantization(metric: Metric): ScalarKind.I8 | ScalarKind.BF16 {
  return metric === 'cosine' ? ScalarKind.I8 : ScalarKind.BF16;
}

/**
 * A usearch index with this table kind's parameters, empty: to fill, or to `view`/`load` a saved
 * graph into (usearch then takes the scalar kind from the file: an older bf16 cosine graph stays
 * bf16). The search thread opens its views with this too (graph-search.worker.ts).
 */
export function newNativeGraph(dimension: number, metric: Metric, expansionSearch: number = ANN_PARAMS.expansionSearch): Index {
  return new Index({
    dimensions: dimension,
    metric: usearchMetric(metric),
    quantization: graphQuantization(metric),
    connectivity: ANN_PARAMS.connectivity,
    expansion_add: ANN_PARAMS.expansionAdd,
    expansion_search: expansionSearch,
    multi: false,
  });
}
