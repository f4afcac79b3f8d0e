/**
 * Background worker threads (the database warm-up pass, file digests and copies) lower their own
 * CPU priority to nice 19 when they start, so the scheduler prefers the search threads and the
 * background work still gets every idle cycle. It is not enough on its own: on two cores a search
 * walks its graphs on both, and a busy third thread slowed searches at 1M by ~1-2 ms at p50
 * whether it ran at nice 19 or SCHED_IDLE (a spinning process beside bench/vectors.bench.ts
 * --n 1000000: p50 5.4-6.4 against 6.6-7.6 ms), so both passes also rest while
 * searches run (db-warmer.ts, file-digest.ts).
 *
 * Linux only: a thread's own id is read from /proc/thread-self, and setpriority(2) on a thread id
 * applies to that thread alone. Elsewhere, or if refused, the thread keeps its priority.
 */
import fs from 'node:fs';
import os from 'node:os';

/**
 * Lowers the calling thread (only it) to `nice` (default 19); does nothing where that cannot be
 * done. Threads it starts afterwards (an onnxruntime session's pool) inherit the value.
 */
export function lowerThisThreadPriority(nice = 19): void {
  try {
    os.setPriority(Number(fs.readlinkSync('/proc/thread-self').split('/').pop()), nice);
  } catch {
    // not Linux, or refused: the thread keeps its priority
  }
}
