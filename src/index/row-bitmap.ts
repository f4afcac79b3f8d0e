/**
 * A set of row ids as one byte per id, for membership tests in the middle of a scan: a typed-array
 * read where a Set lookup hashes. Row ids are SQLite rowids, dense from 1; the rare id beyond
 * DENSE_IDS goes to a plain Set so that one huge id cannot claim gigabytes.
 */

/** What a scan needs of a set of rows to leave out. ReadonlySet<number> is one. */
export interface RowSet {
  readonly size: number;
  has(rowId: number): boolean;
}

const DENSE_IDS = 1 << 27;

export class RowBitmap implements RowSet {
  #bytes = new Uint8Array(1024);
  readonly #sparse = new Set<number>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  has(rowId: number): boolean {
    // A dense id past the array's end was never added; only the others can be in the Set.
    if (rowId >= 0 && rowId < this.#bytes.length) return this.#bytes[rowId] === 1;
    return !isDense(rowId) && this.#sparse.has(rowId);
  }

  /** Adds the row; answers whether it was absent. */
  add(rowId: number): boolean {
    if (!isDense(rowId)) {
      if (this.#sparse.has(rowId)) return false;
      this.#sparse.add(rowId);
      this.#size++;
      return true;
    }
    if (rowId >= this.#bytes.length) {
      let n = this.#bytes.length;
      while (n <= rowId) n *= 2;
      const grown = new Uint8Array(Math.min(n, DENSE_IDS));
      grown.set(this.#bytes);
      this.#bytes = grown;
    }
    if (this.#bytes[rowId] === 1) return false;
    this.#bytes[rowId] = 1;
    this.#size++;
    return true;
  }

  /** Removes the row; answers whether it was present. */
  delete(rowId: number): boolean {
    if (!isDense(rowId)) {
      if (!this.#sparse.delete(rowId)) return false;
    } else {
      if (this.#bytes[rowId] !== 1) return false;
      this.#bytes[rowId] = 0;
    }
    this.#size--;
    return true;
  }
}

/** Ids kept in the byte array (the others, never seen in practice, in the Set). */
const isDense = (rowId: number): boolean => Number.isInteger(rowId) && rowId >= 0 && rowId < DENSE_IDS;
