/**
 * Background worker threads (the database warm-up pass, file digests and copies) lower their own
 * CPU priority to nice 19 when they start. On two cores a search walks its graphs on both, so a
 * background slice that holds a core when a search arrives used to add its whole length to that
 * search; at nice 19 the scheduler gives the core to the search thread as soon as it wakes, and
 * the background work still gets every idle cycle.
 *
 * Plain JS for the workers' eval'd sources. Linux only: a thread's own id is read from
 * /proc/thread-self, and setpriority(2) on a thread id applies to that thread alone. Elsewhere, or
 * if refused, the thread keeps its priority.
 */
export const LOWEST_PRIORITY_JS = `try {
  require('node:os').setPriority(Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()), 19);
} catch {}`;
