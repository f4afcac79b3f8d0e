/**
 * What changed in a cosine table's delta graph since a snapshot of it was written to a file: the
 * rows the file lacks or holds with an old vector. With it, the worker thread goes on walking the
 * file for the delta while the searching thread scans those few rows, instead of the searching
 * thread walking the whole delta itself from the first change on (ann-segments.ts). Qdrant
 * searches its appendable segment beside the immutable ones the same way.
 */
import { QuantisedTail } from './quantised-tail.ts';

export class DeltaSince {
  readonly dimension: number;
  /** Rows written since the snapshot, as int8 copies to scan; allocated at the first one (a table may have many idle deltas). */
  #rows: QuantisedTail | null = null;
  /** Rows the snapshot holds that were removed or given a new vector since: its answers skip them. */
  readonly stale = new Set<number>();

  constructor(dimension: number) {
    this.dimension = dimension;
  }

  /** How far the snapshot is behind: rows to scan plus rows to skip. */
  get changes(): number {
    return (this.#rows?.size ?? 0) + this.stale.size;
  }

  /**
   * Rows written to the delta (`vectors` packed, one row after another). `inDelta`: whether the
   * delta held the row before this write; then the snapshot holds it too, unless written since.
   */
  added(rowIds: ArrayLike<number>, vectors: Float32Array, inDelta: (rowId: number) => boolean): void {
    const d = this.dimension;
    this.#rows ??= new QuantisedTail(d);
    for (let i = 0; i < rowIds.length; i++) {
      const id = rowIds[i];
      if (inDelta(id) && !this.#rows.has(id)) this.stale.add(id);
      this.#rows.set(id, vectors.subarray(i * d, i * d + d));
    }
  }

  /** Rows removed from the delta (each held by it before the removal). */
  removed(rowIds: ArrayLike<number>): void {
    for (let i = 0; i < rowIds.length; i++) {
      const id = rowIds[i];
      if (!this.#rows?.delete(id)) this.stale.add(id);
    }
  }

  /** About the `k` rows written since that are nearest to `query`, with their int8 cosine distances (as a cosine graph reckons them). */
  search(query: Float32Array, k: number): { keys: number[]; distances: number[] } {
    return this.#rows === null ? { keys: [], distances: [] } : this.#rows.searchScored(query, k);
  }
}
