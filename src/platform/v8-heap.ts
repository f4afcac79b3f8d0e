import v8 from 'node:v8';

/**
 * How far V8 lets the old generation grow past what survived a full collection before it starts
 * the next one: limit = live × (1 + HEAP_GROWING_PERCENT / 100), plus the young generation.
 *
 * V8 normally picks that factor after each full collection from how fast the collector marked
 * against how fast the program promoted objects (heap-controller.cc, between 1.1 and 4). A server
 * that has just bulk-loaded and then only answers searches promotes almost nothing, so the factor
 * falls to its floor: the limit sat ~23 MB above a 32 MB live heap, within one young generation,
 * and V8 started a mark-compact every ~250 ms for as long as searches came (1M rows right after
 * the ingest, `--trace-gc --trace-incremental-marking`: 30-40 a run of 1,500 searches, each with
 * 2-7 ms of pause and concurrent marking on the two cores; c1 p99 15-33 ms against 7-10 ms after
 * a restart, which had not collected since its start). A fixed factor of 2 keeps the limit
 * twice the live heap; bench/vectors.bench.ts --n 1000000 shows the p99 right after an ingest.
 */
export const HEAP_GROWING_PERCENT = 100;

/** Applies the setting to this process (every isolate: the workers' heaps too). V8 reads it at each limit computation, so it works after start-up. */
export function tuneV8Heap(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
