/**
 * Failed authentications per client address, so that a client guessing or replaying bad keys is
 * turned away before its requests cost a key lookup. The plan's rate limits (rate-limit.ts) count
 * per user and so only start once a key is valid; this counts what comes before.
 *
 * A fixed window per address, in this process (as the plan's limits). The table is bounded: when
 * full, windows that are over go first, then the oldest, so many addresses cost memory up to the
 * bound and no more (and an evicted address starts afresh, which only ever lets more through).
 * A window is (re)inserted when it starts, so the table's order is start order: both kinds of
 * eviction take from the front.
 */

const WINDOW_MS = 60_000;
const MAX_ADDRESSES = 10_000;

interface Window {
  start: number;
  failures: number;
}

export class AuthFailures {
  readonly #perWindow: number;
  readonly #now: () => number;
  readonly #windows = new Map<string, Window>();

  constructor(perMinute: number, now: () => number = Date.now) {
    this.#perWindow = perMinute;
    this.#now = now;
  }

  /** Seconds until `address` may try again, or 0 when it may now. */
  retryAfter(address: string): number {
    const w = this.#windows.get(address);
    if (w === undefined) return 0;
    const left = w.start + WINDOW_MS - this.#now();
    if (left <= 0) {
      this.#windows.delete(address);
      return 0;
    }
    return w.failures >= this.#perWindow ? Math.ceil(left / 1000) : 0;
  }

  record(address: string): void {
    const now = this.#now();
    const w = this.#windows.get(address);
    if (w !== undefined && now - w.start < WINDOW_MS) {
      w.failures++;
      return;
    }
    this.#windows.delete(address);
    if (this.#windows.size >= MAX_ADDRESSES) this.#evict(now);
    this.#windows.set(address, { start: now, failures: 1 });
  }

  /** How many addresses are tracked (for tests of the bound). */
  get size(): number {
    return this.#windows.size;
  }

  #evict(now: number): void {
    for (const [address, w] of this.#windows) {
      if (this.#windows.size < MAX_ADDRESSES && now - w.start < WINDOW_MS) break;
      this.#windows.delete(address);
    }
  }
}

export const AUTH_FAILURE_LIMITS = Object.freeze({ windowMs: WINDOW_MS, maxAddresses: MAX_ADDRESSES });
