/**
 * The rows of a cosine table that its graphs do not hold yet (the "tail" after a write), as int8
 * copies packed in one buffer, scanned with usearch's SIMD exactSearch. The scan only proposes
 * candidates: the caller re-scores them exactly (stage 2), as it does the graphs' candidates. So a
 * search right after a bulk write walks the graphs for what they hold and scans a quarter of the
 * bytes of the float32 rows for the rest, instead of scanning every row in float32 until the
 * graphs catch up. Chroma keeps such a brute-force buffer in front of its HNSW graph too.
 *
 * Cosine only: a unit vector's coordinates fit int8 at one scale (127); dot-product and Euclidean
 * rows have no common scale, so those tables scan their pending rows in float32 as before.
 */
import { exactSearch, MetricKind } from 'usearch';

/** Rows the first buffer holds; it doubles as rows come and shrinks back once emptied. */
const FIRST_CAPACITY = 1_024;

export class QuantisedTail {
  readonly dimension: number;
  /** Always its own ArrayBuffer from byte 0: usearch reads a typed array from its buffer's start. */
  #codes: Int8Array;
  #rowIds: Float64Array;
  readonly #slotOf = new Map<number, number>();
  #size = 0;

  constructor(dimension: number) {
    if (!Number.isInteger(dimension) || dimension < 1) throw new RangeError(`bad dimension ${dimension}`);
    this.dimension = dimension;
    this.#codes = new Int8Array(FIRST_CAPACITY * dimension);
    this.#rowIds = new Float64Array(FIRST_CAPACITY);
  }

  get size(): number {
    return this.#size;
  }

  /** Bytes held for codes and row ids (capacity, not just live rows). */
  get bytes(): number {
    return this.#codes.byteLength + this.#rowIds.byteLength;
  }

  has(rowId: number): boolean {
    return this.#slotOf.has(rowId);
  }

  /** Inserts the row's int8 copy, or overwrites it in place. */
  set(rowId: number, vector: ArrayLike<number>): void {
    const d = this.dimension;
    if (vector.length !== d) throw new RangeError(`vector has ${vector.length} values, tail has dimension ${d}`);
    let slot = this.#slotOf.get(rowId);
    if (slot === undefined) {
      slot = this.#size++;
      if (slot === this.#rowIds.length) this.#resize(slot * 2);
      this.#slotOf.set(rowId, slot);
      this.#rowIds[slot] = rowId;
    }
    quantise(vector, this.#codes, slot * d);
  }

  /** Removes the row; the last row moves into its slot. */
  delete(rowId: number): boolean {
    const slot = this.#slotOf.get(rowId);
    if (slot === undefined) return false;
    this.#slotOf.delete(rowId);
    const last = --this.#size;
    if (slot !== last) {
      const d = this.dimension;
      this.#codes.copyWithin(slot * d, last * d, last * d + d);
      const moved = this.#rowIds[last];
      this.#rowIds[slot] = moved;
      this.#slotOf.set(moved, slot);
    }
    // An emptied tail gives its memory back (a bulk load's tail can reach hundreds of MB).
    if (this.#size === 0 && this.#rowIds.length > FIRST_CAPACITY) this.#resize(FIRST_CAPACITY);
    return true;
  }

  clear(): void {
    this.#slotOf.clear();
    this.#size = 0;
    this.#resize(FIRST_CAPACITY);
  }

  /**
   * Row ids of about the `k` rows nearest to `query` by cosine, nearest first, with their int8
   * cosine distances (as a cosine graph over int8 copies reckons them): re-score them before
   * trusting the order.
   */
  searchScored(query: Float32Array, k: number): { keys: number[]; distances: number[] } {
    const n = this.#size;
    const want = Math.min(k, n);
    const out = { keys: [] as number[], distances: [] as number[] };
    if (want <= 0) return out;
    const d = this.dimension;
    const q = new Int8Array(d);
    quantise(query, q, 0);
    // One thread: a 16k-row tail is ~6 MB, and usearch's threads per call (0: all cores) cost more
    // than they save while the other core indexes or walks graphs (1.1 against 2.5 ms at 16k rows).
    const found = exactSearch(new Int8Array(this.#codes.buffer, 0, n * d), q, d, want, MetricKind.Cos, 1);
    for (let j = 0; j < want; j++) {
      const slot = Number(found.keys[j]);
      if (slot >= n) continue;
      out.keys.push(this.#rowIds[slot]);
      out.distances.push(found.distances[j]);
    }
    return out;
  }

  #resize(rows: number): void {
    const d = this.dimension;
    const codes = new Int8Array(rows * d);
    codes.set(this.#codes.subarray(0, Math.min(this.#size, rows) * d));
    const ids = new Float64Array(rows);
    ids.set(this.#rowIds.subarray(0, Math.min(this.#size, rows)));
    this.#codes = codes;
    this.#rowIds = ids;
  }
}

/** Writes the unit vector of `v` scaled to [-127, 127] (a zero vector stays zero). */
function quantise(v: ArrayLike<number>, into: Int8Array, at: number): void {
  let norm = 0;
  for (let i = 0; i < v.length; i++) norm += v[i] * v[i];
  const scale = norm > 0 ? 127 / Math.sqrt(norm) : 0;
  for (let i = 0; i < v.length; i++) into[at + i] = Math.round(v[i] * scale);
}
