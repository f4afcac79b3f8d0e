/**
 * Which rows of one table have expired but are still stored (TTL, see docs/API.md): reads must
 * not return them from the moment they expire, and the sweep (expiry-sweep.ts) removes them later
 * in bounded batches. Kept in memory so that a search can leave them out of the matrix scan and
 * the ANN candidates without asking SQLite: a min-heap of (expiry, row id) is popped as the clock
 * passes each expiry, into the set of expired rows, which the sweep empties as it deletes them.
 */
import FlatQueue from 'flatqueue';
import { RowBitmap, type RowSet } from '../../index/row-bitmap.ts';
import type { HiddenRows } from './index-upkeep.ts';

/**
 * Row ids in the order they were pushed, taken from the front once each (skipping the ones
 * `still` rejects by then). A plain array with a cursor: taking from a Set instead would walk its
 * deleted entries again on every batch (V8 leaves holes until it shrinks the table): 1M rows in
 * batches of 200 took 12.5 s of such walks, up to 140 ms a batch.
 */
class IdQueue {
  #ids: number[] = [];
  #at = 0;

  push(id: number): void {
    this.#ids.push(id);
  }

  pushAll(ids: readonly number[]): void {
    for (const id of ids) this.#ids.push(id);
  }

  take(max: number, still: (id: number) => boolean): number[] {
    const out: number[] = [];
    const ids = this.#ids;
    while (out.length < max && this.#at < ids.length) {
      const id = ids[this.#at++];
      if (still(id)) out.push(id);
    }
    // Drop the taken front now and then, so the array does not hold a million spent ids.
    if (this.#at > 4096 && this.#at * 2 > ids.length) {
      this.#ids = ids.slice(this.#at);
      this.#at = 0;
    }
    return out;
  }
}

export class ExpiryTracker implements HiddenRows {
  /** rowId -> expiry (ms) of every stored row that has one; the truth the heap's entries are checked against. */
  readonly #at = new Map<number, number>();
  /** (rowId by expiry); entries of rows rewritten or deleted since are stale and dropped when popped. */
  readonly #heap = new FlatQueue<number>();
  /** A bitmap, so that a scan tests each row it reads for a byte rather than a hash lookup. */
  readonly #expired = new RowBitmap();
  /** Expired rows already taken out of the ANN graphs (takeForGraphs), a subset of #expired. */
  readonly #unindexed = new RowBitmap();
  /** The expired rows in the order they expired: for the sweep, and for taking them out of the graphs first. */
  readonly #due = new IdQueue();
  readonly #leaving = new IdQueue();

  /** Records a row's expiry as just written (null: none). */
  set(rowId: number, expiresAt: number | null): void {
    this.#expired.delete(rowId);
    this.#unindexed.delete(rowId);
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
      this.#unindexed.delete(id);
    }
  }

  /** The rows expired as of `now` and not yet removed (a live view: do not keep it across writes). */
  expired(now: number): RowSet {
    const heap = this.#heap;
    while (heap.length > 0 && heap.peekValue()! <= now) {
      const expiresAt = heap.peekValue()!;
      const id = heap.pop()!;
      if (this.#at.get(id) === expiresAt && this.#expired.add(id)) {
        this.#due.push(id);
        this.#leaving.push(id);
      }
    }
    // Stale entries pile up when rows with a TTL are rewritten often; rebuild from the truth then.
    if (heap.length > 2 * this.#at.size + 1024) this.#rebuild();
    return this.#expired;
  }

  /**
   * Up to `max` rows expired as of `now` and not yet removed, the longest expired first; each
   * is handed out once per expiry, unless given back by retake().
   */
  takeExpired(now: number, max: number): number[] {
    this.expired(now);
    return this.#due.take(max, (id) => this.#expired.has(id));
  }

  /** Hands rows taken by takeExpired out again (their removal failed). */
  retake(rowIds: readonly number[]): void {
    this.#due.pushAll(rowIds);
  }

  /**
   * Up to `max` expired rows the ANN graphs may still hold, counted as out of them from now on:
   * the caller takes them out (before the sweep deletes their rows, which takes far longer).
   */
  takeForGraphs(now: number, max: number): number[] {
    this.expired(now);
    const out = this.#leaving.take(max, (id) => this.#expired.has(id) && !this.#unindexed.has(id));
    for (const id of out) this.#unindexed.add(id);
    return out;
  }

  /** Whether the row was expired when last asked (HiddenRows: the graphs must not take it back). */
  has(rowId: number): boolean {
    return this.#expired.has(rowId);
  }

  /** Expired rows still stored that the graphs no longer hold. */
  get unindexed(): number {
    return this.#unindexed.size;
  }

  /** Expired rows still stored that the graphs may still hold (searches widen their walks by these). */
  get indexedExpired(): number {
    return this.#expired.size - this.#unindexed.size;
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
export const NONE_EXPIRED: RowSet = new Set<number>();

/** A row's expiresAt as answered: only rows that expire carry the field. */
export const expiryField = (expiresAt: number | null): { expiresAt?: number } => (expiresAt !== null ? { expiresAt } : {});

/** The SQL condition (on `vectors`) of a row not expired at the one parameter, now in ms. */
export const LIVE = '(expires_at IS NULL OR expires_at > ?)';
