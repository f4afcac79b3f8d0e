/**
 * How background passes (the database warm-up, graph copies and hashes) learn that searches are
 * running, so they rest: counters in shared memory that their threads read between slices. On
 * two cores a search walks its graphs on both, and a busy third thread slows it whatever that
 * thread's priority (at 1M rows ~1-2 ms at p50 at nice 19 or SCHED_IDLE alike: thread-priority.ts).
 *
 * The counters cross to a worker as `shared` (an Int32Array over a SharedArrayBuffer), and the
 * worker wraps them again (`new YieldSignal(shared)`): a class instance would arrive without its slots.
 */

/** How long a copy or hash waits for a gap in a stream of searches, unless told otherwise. */
const GAP_PATIENCE_MS = 30_000;

/** What each slot of the shared array holds. */
const SLOT = Object.freeze({ searches: 0, rests: 1, patience: 2 });

export class YieldSignal {
  readonly #slots: Int32Array;

  /**
   * A new signal whose copies and hashes wait at most `gapPatienceMs` for a gap in the searches
   * (see copyFileDigested), or, given another thread's `shared` counters, that same signal.
   */
  constructor(init: number | Int32Array = GAP_PATIENCE_MS) {
    if (typeof init !== 'number') {
      this.#slots = init;
      return;
    }
    this.#slots = new Int32Array(new SharedArrayBuffer(Object.keys(SLOT).length * Int32Array.BYTES_PER_ELEMENT));
    Atomics.store(this.#slots, SLOT.patience, init);
  }

  /** The counters in shared memory, to hand to a worker thread. */
  get shared(): Int32Array {
    return this.#slots;
  }

  /** Counts a search (the storage, on every search). */
  searchStarted(): void {
    Atomics.add(this.#slots, SLOT.searches, 1);
  }

  /** Searches counted so far: a pass that sees it move knows searches run. */
  get searches(): number {
    return Atomics.load(this.#slots, SLOT.searches);
  }

  /** Counts a rest a background pass took for the searches. */
  restTaken(): void {
    Atomics.add(this.#slots, SLOT.rests, 1);
  }

  /** Rests the background passes took for searches (for tests and monitoring). */
  get rests(): number {
    return Atomics.load(this.#slots, SLOT.rests);
  }

  /** How long, in ms, a copy or hash may wait for a gap in the searches before it goes on between them. */
  get gapPatienceMs(): number {
    return Atomics.load(this.#slots, SLOT.patience);
  }
}
