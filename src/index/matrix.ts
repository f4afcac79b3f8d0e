/**
 * The full-precision vectors of one table, in memory, for exact scans and re-scoring. Storage
 * keeps its tables in files (FileMatrix, vector-file.ts); this in-memory VectorMatrix serves the
 * index layer's own tests, whose small segment sizes exercise scans across many blocks.
 *
 * Rows live in fixed-size segments so that growth never copies more than one segment, and each
 * segment owns its ArrayBuffer at offset 0: usearch's `exactSearch` reads a typed array's
 * buffer from its start and ignores `byteOffset`, so a segment view must begin at byte 0.
 * Deletes swap the last slot into the hole, so the live rows of every segment stay dense.
 */

export const SEGMENT_ROWS = 65_536;
/** A new last segment starts this small and doubles, so tiny tables stay tiny. */
const FIRST_CAPACITY = 64;

/** A packed run of vectors (`rowIds.length * dimension` floats, byteOffset 0) and their row ids. */
export interface VectorBlock {
  vectors: Float32Array;
  rowIds: Float64Array;
}

/**
 * A table's full-precision vectors by row id: in memory (SegmentedMatrix) or in a file
 * (FileMatrix, vector-file.ts). Blocks from segments() and gather() are valid only until the
 * next block is taken or the matrix is written; get() may return a view with the same limit.
 */
export interface VectorMatrix {
  readonly dimension: number;
  readonly size: number;
  has(rowId: number): boolean;
  get(rowId: number): Float32Array | undefined;
  /**
   * A view of the row's vector without a copy or a read, valid until the next write; null when
   * the matrix does not hold its rows in memory (a file-backed table past the memory budget).
   */
  residentView?(rowId: number): Float32Array | undefined | null;
  /** Whether the rows are held in memory (residentView answers them). */
  readonly inMemory: boolean;
  set(rowId: number, vector: ArrayLike<number>): void;
  /** set() for many rows at once (a file-backed matrix writes new rows in one call). */
  setMany(rowIds: ArrayLike<number>, vectors: ArrayLike<ArrayLike<number>>): void;
  /** Claims storage for `rows` more rows now, so that the set() of them cannot run out (file-backed only). */
  reserve?(rows: number): void;
  delete(rowId: number): boolean;
  segments(): IterableIterator<VectorBlock>;
  /** The row id at a position in slot order (0 .. size-1). */
  rowIdAt(position: number): number | undefined;
  gather(rowIds: Iterable<number>, blockRows?: number): IterableIterator<VectorBlock>;
}

export class SegmentedMatrix implements VectorMatrix {
  readonly dimension: number;
  readonly segmentRows: number;
  readonly #vectors: Float32Array[] = [];
  readonly #rowIds: Float64Array[] = [];
  readonly #slotOf = new Map<number, number>();
  #size = 0;

  constructor(dimension: number, segmentRows = SEGMENT_ROWS) {
    if (!Number.isInteger(dimension) || dimension < 1) throw new RangeError(`bad dimension ${dimension}`);
    if (!Number.isInteger(segmentRows) || segmentRows < 1) throw new RangeError(`bad segment size ${segmentRows}`);
    this.dimension = dimension;
    this.segmentRows = segmentRows;
  }

  get size(): number {
    return this.#size;
  }

  has(rowId: number): boolean {
    return this.#slotOf.has(rowId);
  }

  /** A view of the row's vector; valid until the next write to the matrix. */
  get(rowId: number): Float32Array | undefined {
    const slot = this.#slotOf.get(rowId);
    if (slot === undefined) return undefined;
    const seg = this.#vectors[Math.floor(slot / this.segmentRows)];
    const at = (slot % this.segmentRows) * this.dimension;
    return seg.subarray(at, at + this.dimension);
  }

  residentView(rowId: number): Float32Array | undefined {
    return this.get(rowId);
  }

  get inMemory(): boolean {
    return true;
  }

  /** Inserts the row, or overwrites its vector in place. */
  set(rowId: number, vector: ArrayLike<number>): void {
    if (vector.length !== this.dimension) throw new RangeError(`vector has ${vector.length} values, matrix has dimension ${this.dimension}`);
    let slot = this.#slotOf.get(rowId);
    if (slot === undefined) {
      slot = this.#size;
      this.#ensureSlot(slot);
      this.#rowIds[Math.floor(slot / this.segmentRows)][slot % this.segmentRows] = rowId;
      this.#slotOf.set(rowId, slot);
      this.#size++;
    }
    this.#vectors[Math.floor(slot / this.segmentRows)].set(vector, (slot % this.segmentRows) * this.dimension);
  }

  setMany(rowIds: ArrayLike<number>, vectors: ArrayLike<ArrayLike<number>>): void {
    for (let i = 0; i < rowIds.length; i++) this.set(rowIds[i], vectors[i]);
  }

  /** Removes the row; the last row moves into its slot. */
  delete(rowId: number): boolean {
    const slot = this.#slotOf.get(rowId);
    if (slot === undefined) return false;
    this.#slotOf.delete(rowId);
    const last = this.#size - 1;
    const R = this.segmentRows;
    const d = this.dimension;
    if (slot !== last) {
      const lastSeg = Math.floor(last / R);
      const lastOff = last % R;
      const movedId = this.#rowIds[lastSeg][lastOff];
      const seg = Math.floor(slot / R);
      const off = slot % R;
      this.#vectors[seg].set(this.#vectors[lastSeg].subarray(lastOff * d, lastOff * d + d), off * d);
      this.#rowIds[seg][off] = movedId;
      this.#slotOf.set(movedId, slot);
    }
    this.#size = last;
    // Free an emptied trailing segment, but keep one spare so a delete/insert cycle at a
    // segment boundary does not allocate and free a whole segment each time.
    const needed = Math.ceil(this.#size / R);
    while (this.#vectors.length > needed + 1) {
      this.#vectors.pop();
      this.#rowIds.pop();
    }
    return true;
  }

  /** The live rows, one block per segment (views, not copies: do not keep them across writes). */
  *segments(): IterableIterator<VectorBlock> {
    const R = this.segmentRows;
    for (let s = 0; s * R < this.#size; s++) {
      const count = Math.min(R, this.#size - s * R);
      yield {
        vectors: new Float32Array(this.#vectors[s].buffer, 0, count * this.dimension),
        rowIds: this.#rowIds[s].subarray(0, count),
      };
    }
  }

  rowIdAt(position: number): number | undefined {
    if (!(position >= 0 && position < this.#size)) return undefined;
    return this.#rowIds[Math.floor(position / this.segmentRows)][position % this.segmentRows];
  }

  /**
   * Copies the given rows into packed blocks of at most `blockRows` rows (rows that are not
   * present are skipped), for scans restricted to a subset such as a filter's matches. A block
   * starts small and doubles, so gathering a handful of rows does not allocate a full block.
   */
  *gather(rowIds: Iterable<number>, blockRows = 16_384): IterableIterator<VectorBlock> {
    const d = this.dimension;
    let cap = Math.min(blockRows, 256);
    let vectors = new Float32Array(cap * d);
    let ids = new Float64Array(cap);
    let n = 0;
    for (const id of rowIds) {
      const v = this.get(id);
      if (v === undefined) continue;
      if (n === cap) {
        if (cap === blockRows) {
          yield { vectors, rowIds: ids };
          vectors = new Float32Array(cap * d);
          ids = new Float64Array(cap);
          n = 0;
        } else {
          cap = Math.min(blockRows, cap * 2);
          const grown = new Float32Array(cap * d);
          grown.set(vectors);
          vectors = grown;
          const grownIds = new Float64Array(cap);
          grownIds.set(ids);
          ids = grownIds;
        }
      }
      vectors.set(v, n * d);
      ids[n++] = id;
    }
    if (n > 0) yield { vectors: new Float32Array(vectors.buffer, 0, n * d), rowIds: ids.subarray(0, n) };
  }

  #ensureSlot(slot: number): void {
    const R = this.segmentRows;
    const s = Math.floor(slot / R);
    const off = slot % R;
    if (s === this.#vectors.length) {
      const cap = Math.min(R, FIRST_CAPACITY);
      this.#vectors.push(new Float32Array(cap * this.dimension));
      this.#rowIds.push(new Float64Array(cap));
      return;
    }
    const ids = this.#rowIds[s];
    if (off < ids.length) return;
    // Only the last segment is ever partial, so only it grows (doubling, capped at R rows).
    const cap = Math.min(R, ids.length * 2);
    const v = new Float32Array(cap * this.dimension);
    v.set(this.#vectors[s]);
    const r = new Float64Array(cap);
    r.set(ids);
    this.#vectors[s] = v;
    this.#rowIds[s] = r;
  }
}
