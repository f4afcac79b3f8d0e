/**
 * How background passes (the database warm-up, graph copies and hashes) learn that searches are
 * running, so they rest: counters in shared memory that their threads read between slices.
 * Slot 0 counts searches (moved by the storage on every search); slot 1 counts the rests the
 * background passes took for them; slot 2 holds how long, in ms, a copy or hash may wait for a
 * gap in the searches before it goes on between them (see copyFileDigested). On two cores a
 * search walks its graphs on both, and a busy third thread slows it whatever that thread's
 * priority (docs/PERFORMANCE.md).
 */
export type YieldSignal = Int32Array;

/** How long a copy or hash waits for a gap in a stream of searches, unless told otherwise. */
const GAP_PATIENCE_MS = 30_000;

export function newYieldSignal(gapPatienceMs = GAP_PATIENCE_MS): YieldSignal {
  const signal = new Int32Array(new SharedArrayBuffer(12));
  signal[2] = gapPatienceMs;
  return signal;
}
