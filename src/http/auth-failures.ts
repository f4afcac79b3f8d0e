/**
 * Failed authentications, per client address and in all, so that guessing keys is slowed without
 * ever costing a valid key anything: the key is looked up first (a hash and an indexed lookup,
 * cheap) and only a request whose key failed is counted here, or refused. An address behind a
 * shared NAT that floods wrong keys therefore slows its own failures, never its neighbours' good
 * keys; the global budget slows a guess spread over many addresses the same way.
 *
 * Fixed windows of a minute, in this process (as the plan's limits). The per-address table is
 * bounded: when full, windows that are over go first, then the oldest, so many addresses cost
 * memory up to the bound and no more (and an evicted address starts afresh, which only ever lets
 * more through). A window is (re)inserted when it starts, so the table's order is start order:
 * both kinds of eviction take from the front.
 */

const WINDOW_MS = 60_000;
const MAX_ADDRESSES = 10_000;

interface Window {
  start: number;
  failures: number;
}

export class AuthFailures {
  readonly #perAddress: number;
  readonly #global: number;
  readonly #now: () => number;
  readonly #windows = new Map<string, Window>();
  #all: Window = { start: -Infinity, failures: 0 };

  /** `perAddress` and `global`: failures answered 401 per window before further ones are 429. */
  constructor(limits: { perAddress: number; global: number }, now: () => number = Date.now) {
    this.#perAddress = limits.perAddress;
    this.#global = limits.global;
    this.#now = now;
  }

  /**
   * A request from `address` failed authentication: 0 when it is to be answered 401 (and it is
   * counted), otherwise the seconds until failures are answered 401 again (a 429), not counted.
   */
  fail(address: string): number {
    const now = this.#now();
    let w = this.#windows.get(address);
    if (w !== undefined && now - w.start >= WINDOW_MS) {
      this.#windows.delete(address);
      w = undefined;
    }
    if (now - this.#all.start >= WINDOW_MS) this.#all = { start: now, failures: 0 };
    const waits = [
      w !== undefined && w.failures >= this.#perAddress ? w.start + WINDOW_MS - now : 0,
      this.#all.failures >= this.#global ? this.#all.start + WINDOW_MS - now : 0,
    ];
    const wait = Math.max(...waits);
    if (wait > 0) return Math.ceil(wait / 1000);
    this.#all.failures++;
    if (w !== undefined) w.failures++;
    else {
      if (this.#windows.size >= MAX_ADDRESSES) this.#evict(now);
      this.#windows.set(address, { start: now, failures: 1 });
    }
    return 0;
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
