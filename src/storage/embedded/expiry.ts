/**
 * Which rows of one table have expired but are still stored (TTL, see docs/API.md): reads must
 * not return them from the moment they expire, and the sweep (expiry-sweep.ts) removes them later
 * in bounded batches. Kept in memory so that a search can leave them out of the matrix scan and
 * the ANN candidates without asking SQLite: a min-heap of (expiry, row id) is popped as the clock
 * passes each expiry, into the set of expired rows, which the sweep empties as it deletes them.
 */
import FlatQueue from 'flatqueue';

export class ExpiryTracker {
  /** rowId -> expiry (ms) of every stored row that has one; the truth the heap's entries are checked against. */
  readonly #at = new Map<number, number>();
  /** (rowId by expiry); entries of rows rewritten or deleted since are stale and dropped when popped. */
  readonly #heap = new FlatQueue<number>();
  readonly #expired = new Set<number>();

  /** Records a row's expiry as just written (null: none). */
  set(rowId: number, expiresAt: number | null): void {
    this.#expired.delete(rowId);
    if (expiresAt === null) {
      this.#at.delete(rowId);
      return;
    }
    this.#at.set(rowId, expiresAt);
    this.#heap.push(rowId, expiresAt);
  }

  /** Forgets rows that were deleted. */
  removed(rowIds: Iterable<number>): void {
    for (const id of rowIds) {
      this.#at.delete(id);
      this.#expired.delete(id);
    }
  }

  /** The rows expired as of `now` and not yet removed (a live view: do not keep it across writes). */
  expired(now: number): ReadonlySet<number> {
    const heap = this.#heap;
    while (heap.length > 0 && heap.peekValue()! <= now) {
      const expiresAt = heap.peekValue()!;
      const id = heap.pop()!;
      if (this.#at.get(id) === expiresAt) this.#expired.add(id);
    }
    // Stale entries pile up when rows with a TTL are rewritten often; rebuild from the truth then.
    if (heap.length > 2 * this.#at.size + 1024) this.#rebuild();
    return this.#expired;
  }

  /** Rows that have an expiry (expired or not). */
  get size(): number {
    return this.#at.size;
  }

  #rebuild(): void {
    this.#heap.clear();
    for (const [id, at] of this.#at) if (!this.#expired.has(id)) this.#heap.push(id, at);
  }
}

/** The empty set for tables with no expiring rows. */
export const NONE_EXPIRED: ReadonlySet<number> = new Set();

/** A row's expiresAt as answered: only rows that expire carry the field. */
export const expiryField = (expiresAt: number | null): { expiresAt?: number } => (expiresAt !== null ? { expiresAt } : {});

/** The SQL condition (on `vectors`) of a row not expired at the one parameter, now in ms. */
export const LIVE = '(expires_at IS NULL OR expires_at > ?)';
