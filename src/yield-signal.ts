/**
 * How background passes (the database warm-up, graph copies and hashes) learn that searches are
 * running, so they rest: counters in shared memory that their threads read between slices.
 * Slot 0 counts searches (moved by the storage on every search); slot 1 counts the rests the
 * background passes took for them. On two cores a search walks its graphs on both, and a busy
 * third thread slows it whatever that thread's priority (docs/PERFORMANCE.md).
 */
export type YieldSignal = Int32Array;

export const newYieldSignal = (): YieldSignal => new Int32Array(new SharedArrayBuffer(8));
