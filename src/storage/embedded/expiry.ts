/**
 * Which rows of one table have expired but are still stored (TTL, see docs/API.md): reads must
 * not return them from the moment they expire, and the sweep (expiry-sweep.ts) removes them later
 * in bounded batches. Kept in memory so that a search can leave them out of the matrix scan and
 * the ANN candidates without asking SQLite: rows are grouped by their expiry (ms), and each group
 * moves whole into the set of expired rows as the clock passes it, which the sweep empties as it
 * deletes them.
 */
import FlatQueue from 'flatqueue';
import { RowBitmap, type RowSet } from '../../index/row-bitmap.ts';
import type { HiddenRows } from './index-upkeep.ts';

/**
 * Row ids in the order they were pushed, in chunks, taken from the front once each (skipping the
 * ones `still` rejects by then). Arrays with a cursor: taking from a Set instead would walk its
 * deleted entries again on every batch (V8 leaves holes until it shrinks the table): 1M rows in
 * batches of 200 took 12.5 s of such walks, up to 140 ms a batch. Chunks, so that a million rows
 * expiring at once are queued as one array, not a million pushes.
 */
class IdQueue {
  #chunks: (readonly number[])[] = [];
  #chunk = 0;
  #at = 0;

  /** Queues `ids` (kept as they are: the caller must not change the array afterwards). */
  pushAll(ids: readonly number[]): void {
    if (ids.length > 0) this.#chunks.push(ids);
  }

  take(max: number, still: (id: number) => boolean): number[] {
    const out: number[] = [];
    while (out.length < max && this.#chunk < this.#chunks.length) {
      const ids = this.#chunks[this.#chunk];
      while (out.length < max && this.#at < ids.length) {
        const id = ids[this.#at++];
        if (still(id)) out.push(id);
      }
      if (this.#at >= ids.length) {
        this.#chunk++;
        this.#at = 0;
      }
    }
    // Drop spent chunks now and then.
    if (this.#chunk > 64 && this.#chunk * 2 > this.#chunks.length) {
      this.#chunks = this.#chunks.slice(this.#chunk);
      this.#chunk = 0;
    }
    return out;
  }
}

export class ExpiryTracker implements HiddenRows {
  /** rowId -> expiry (ms) of every stored row that has one; the truth the groups' entries are checked against. */
  readonly #at = new Map<number, number>();
  /**
   * Expiry (ms) -> the rows written with it; entries of rows rewritten or deleted since are stale
   * and dropped when the group expires. A write batch shares one expiry, so a million rows
   * expiring at once are a few groups: moving them is a pass over arrays, where a heap of
   * (row, expiry) took 1.6 s to pop a million rows with distinct expiries. A group of one row
   * is the bare id (rows written one at a time each have their own).
   */
  readonly #groups = new Map<number, number | number[]>();
  /** The groups' expiries, soonest first. */
  readonly #times = new FlatQueue<number>();
  /** Row entries in the groups, stale ones included (rebuilt when they pile up). */
  #entries = 0;
  /**
   * Per group, the rows whose entry there went stale (rewritten or deleted before it expired):
   * only these are checked against #at when the group expires. Checking every row cost more than
   * the rest of the move together (~150 ms a million).
   */
  readonly #stale = new Map<number, Set<number>>();
  /** A bitmap, so that a scan tests each row it reads for a byte rather than a hash lookup. */
  readonly #expired = new RowBitmap();
  /** Expired rows already taken out of the ANN graphs (takeForGraphs), a subset of #expired. */
  readonly #unindexed = new RowBitmap();
  /** The expired rows in the order they expired: for the sweep, and for taking them out of the graphs first. */
  readonly #due = new IdQueue();
  readonly #leaving = new IdQueue();

  /** Records a row's expiry as just written (null: none). */
  set(rowId: number, expiresAt: number | null): void {
    const old = this.#at.get(rowId);
    if (old === expiresAt && !this.#expired.has(rowId)) return; // its entry still holds
    this.#leftGroup(rowId, old);
    this.#expired.delete(rowId);
    this.#unindexed.delete(rowId);
    if (expiresAt === null) {
      this.#at.delete(rowId);
      return;
    }
    this.#at.set(rowId, expiresAt);
    this.#addToGroup(rowId, expiresAt);
  }

  /** Marks the row's entry in the group of `expiresAt` stale, if it has one (not yet expired). */
  #leftGroup(rowId: number, expiresAt: number | undefined): void {
    if (expiresAt === undefined || this.#expired.has(rowId) || !this.#groups.has(expiresAt)) return;
    let st = this.#stale.get(expiresAt);
    if (st === undefined) this.#stale.set(expiresAt, (st = new Set()));
    st.add(rowId);
  }

  #addToGroup(rowId: number, expiresAt: number): void {
    const g = this.#groups.get(expiresAt);
    if (g === undefined) {
      this.#groups.set(expiresAt, rowId);
      this.#times.push(expiresAt, expiresAt);
    } else if (typeof g === 'number') this.#groups.set(expiresAt, [g, rowId]);
    else g.push(rowId);
    this.#entries++;
  }

  /** Forgets rows that were deleted. */
  removed(rowIds: Iterable<number>): void {
    for (const id of rowIds) {
      this.#leftGroup(id, this.#at.get(id));
      this.#at.delete(id);
      this.#expired.delete(id);
      this.#unindexed.delete(id);
    }
  }

  /** The rows expired as of `now` and not yet removed (a live view: do not keep it across writes). */
  expired(now: number): RowSet {
    const times = this.#times;
    while (times.length > 0 && times.peekValue()! <= now) {
      const expiresAt = times.pop()!;
      const g = this.#groups.get(expiresAt)!;
      const group = typeof g === 'number' ? [g] : g;
      this.#groups.delete(expiresAt);
      this.#entries -= group.length;
      const stale = this.#stale.get(expiresAt);
      this.#stale.delete(expiresAt);
      // In place: the group array becomes the queues' chunk of the rows that did expire. A stale
      // entry's row may have come back with the same expiry (a deleted row's id reused): #at says.
      let n = 0;
      const expired = this.#expired;
      if (stale === undefined) for (const id of group) expired.add(id) && (group[n++] = id);
      else for (const id of group) if ((!stale.has(id) || this.#at.get(id) === expiresAt) && expired.add(id)) group[n++] = id;
      group.length = n;
      this.#due.pushAll(group);
      this.#leaving.pushAll(group);
    }
    // Stale entries pile up when rows with a TTL are rewritten often; rebuild from the truth then.
    if (this.#entries > 2 * this.#at.size + 1024) this.#rebuild();
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
    this.#due.pushAll(rowIds.slice());
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
    this.#groups.clear();
    this.#stale.clear();
    this.#times.clear();
    this.#entries = 0;
    for (const [id, at] of this.#at) if (!this.#expired.has(id)) this.#addToGroup(id, at);
  }
}

/** The empty set for tables with no expiring rows. */
export const NONE_EXPIRED: RowSet = new Set<number>();

/** A row's expiresAt as answered: only rows that expire carry the field. */
export const expiryField = (expiresAt: number | null): { expiresAt?: number } => (expiresAt !== null ? { expiresAt } : {});

/** The SQL condition (on `vectors`) of a row not expired at the one parameter, now in ms. */
export const LIVE = '(expires_at IS NULL OR expires_at > ?)';
