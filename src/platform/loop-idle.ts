/**
 * Whether this thread's event loop waited for work since the last look: a request handled after
 * such a wait came alone (the next one was not already queued, as at concurrency 1), one handled
 * with no wait since the last was one of many. Read from the loop's own idle time
 * (performance.eventLoopUtilization), which costs about a microsecond.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/** Idle time below this (ms) is the loop's own turnaround, not a wait for work. */
const WAITED_MS = 0.02;

export class LoopIdle {
  #last: EventLoopUtilization = performance.eventLoopUtilization();

  /** Whether the loop idled since the previous call (or since this was made). */
  waitedSinceLast(): boolean {
    const now = performance.eventLoopUtilization();
    const idle = now.idle - this.#last.idle;
    this.#last = now;
    return idle > WAITED_MS;
  }
}
