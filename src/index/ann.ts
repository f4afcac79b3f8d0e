/**
 * One usearch HNSW graph over compact copies of vectors, keyed by row id: the building block of a
 * table's approximate stage-1 index (ann-segments.ts). The caller re-scores what it returns with
 * the full-precision vectors, so it is derived state that may always be rebuilt.
 *
 * The copies are 8-bit for cosine tables and bfloat16 for the others (graphQuantization): smaller
 * files and page cache, faster builds and somewhat faster walks. usearch's int8 cast scales each
 * vector to unit length first, which keeps cosine and nothing else, so dot-product and Euclidean
 * tables keep 16 bits (graph-params.ts). A saved graph keeps the kind it was written with: usearch reads it from the
 * file, whatever the index was created with. bfloat16 rather than IEEE half:
 * the same size and, measured here, the same recall, but float32's exponent range (f16 turns any
 * component above 65504 into infinity, which breaks dot-product and Euclidean tables of
 * unnormalised vectors).
 *
 * A graph is either in memory (mutable) or a read-only view of a saved file (memory-mapped by
 * usearch: file-backed pages, not the process's anonymous memory, and no load time).
 */
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Index } from 'usearch';
import { ANN_PARAMS, newNativeGraph } from './graph-params.ts';
import type { Metric } from './metric.ts';
import { fsyncDir, fsyncPath } from '../platform/durable-file.ts';
import { DIR_MODE, FILE_MODE } from '../platform/private-dir.ts';
import { copyFileDigested, digestFile, type FileDigest } from '../platform/file-digest.ts';
import { keysAsNumbers } from './usearch-keys.ts';
import type { YieldSignal } from '../platform/yield-signal.ts';

export type { FileDigest };

export interface Scored {
  keys: Float64Array;
  distances: Float32Array;
}

export class AnnIndex {
  readonly dimension: number;
  readonly metric: Metric;
  readonly #index: Index;
  #viewed = false;

  private constructor(dimension: number, metric: Metric, index: Index) {
    this.dimension = dimension;
    this.metric = metric;
    this.#index = index;
  }

  static create(dimension: number, metric: Metric, expansionSearch = ANN_PARAMS.expansionSearch): AnnIndex {
    return new AnnIndex(dimension, metric, newNativeGraph(dimension, metric, expansionSearch));
  }

  /** How many rows the graph holds. */
  get size(): number {
    return this.#index.size();
  }

  /** Whether the graph is a read-only view of a file. */
  get viewed(): boolean {
    return this.#viewed;
  }

  /** For each row id, whether the graph holds it (one native call). */
  containsMany(rowIds: ArrayLike<number>): boolean[] {
    if (rowIds.length === 0) return [];
    const r = this.#index.contains(BigUint64Array.from(rowIds as ArrayLike<number>, (x) => BigInt(x)));
    return Array.isArray(r) ? r : [r];
  }

  /**
   * Inserts or replaces rows (`vectors` holds rowIds.length * dimension values). usearch refuses a
   * key it already holds, so every key is removed first (a no-op for new keys).
   */
  add(rowIds: ArrayLike<number>, vectors: Float32Array): void {
    if (rowIds.length === 0) return;
    if (this.#viewed) throw new Error('a viewed graph is read-only');
    if (vectors.length !== rowIds.length * this.dimension) throw new RangeError(`${rowIds.length} rows need ${rowIds.length * this.dimension} values, got ${vectors.length}`);
    const keys = BigUint64Array.from(rowIds as ArrayLike<number>, (x) => BigInt(x));
    this.#index.remove(keys);
    // A few rows on this thread: usearch starts its threads per call (0: all cores), which for the
    // short slices index upkeep takes while searches come costs more than the inserts, and much
    // more on a busy machine where the threads wait to be scheduled. But never when the call
    // grows the graph: usearch then reserves per-thread state for the call's thread count only,
    // and every later call on more threads failed ("Reserve capacity ahead of insertions!")
    // until the next growth, which stalled indexing after small slices at every doubling.
    const grows = this.#index.size() + rowIds.length >= this.#index.capacity();
    this.#index.add(keys, vectors, rowIds.length < 64 && !grows ? 1 : 0);
  }

  remove(rowIds: ArrayLike<number>): void {
    if (rowIds.length === 0) return;
    if (this.#viewed) throw new Error('a viewed graph is read-only');
    this.#index.remove(BigUint64Array.from(rowIds as ArrayLike<number>, (x) => BigInt(x)));
  }

  /** Row ids of about the `k` nearest rows, nearest first. */
  search(query: Float32Array, k: number): number[] {
    return Array.from(this.searchScored(query, k).keys);
  }

  /** The same, with usearch's distances (approximate: from the graph's compact copies). */
  searchScored(query: Float32Array, k: number): Scored {
    const n = Math.min(k, this.size);
    if (n <= 0) return { keys: new Float64Array(0), distances: new Float32Array(0) };
    const found = this.#index.search(query, n, 1);
    return { keys: keysAsNumbers(found.keys), distances: found.distances };
  }

  /**
   * Writes the graph to `file` atomically (unique temp file, fsync, rename, directory fsync) and
   * returns its digest. The snapshot is taken before this returns, so later changes to the graph
   * are not in the file. `forMapping`: the file will be memory-mapped (a sealed segment's view),
   * so usearch's output, written a node at a time, is copied in large blocks and the copy kept
   * (copyFileDigested: the walks of the map then miss the TLB far less). usearch's own output
   * is never fsynced: the `finally` below removes it, so its pages need not reach the disk.
   * `yieldTo`: the copy or hash waits for gaps in the searches that move its count.
   */
  writeFile(file: string, opts: { forMapping?: boolean; yieldTo?: YieldSignal } = {}): Promise<FileDigest> {
    const tmpName = () => `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const tmp = tmpName();
    try {
      mkdirSync(path.dirname(file), { recursive: true, mode: DIR_MODE });
      // usearch would create the file with the umask's mode (0644 by default); writing over one
      // that exists, it keeps that one's mode.
      closeSync(openSync(tmp, 'wx', FILE_MODE));
      this.#index.save(tmp);
    } catch (e) {
      rmSync(tmp, { force: true });
      return Promise.reject(e);
    }
    return (async () => {
      const copy = opts.forMapping ? tmpName() : null;
      try {
        let digest: FileDigest;
        if (copy) {
          digest = await copyFileDigested(tmp, copy, { yieldTo: opts.yieldTo });
        } else {
          await fsyncPath(tmp);
          digest = await digestFile(tmp, { yieldTo: opts.yieldTo });
        }
        await fs.rename(copy ?? tmp, file);
        await fsyncDir(path.dirname(file));
        return digest;
      } finally {
        await fs.rm(tmp, { force: true });
        if (copy) await fs.rm(copy, { force: true });
      }
    })();
  }

  /**
   * Touches every page of a viewed graph once, in order, by writing it to /dev/null: the pages a
   * search would otherwise fault in one at a time (each fault costs microseconds in a VM) get
   * mapped in one sequential pass (~0.1 s for 230 MB). Blocks the thread meanwhile.
   */
  prefault(): void {
    if (this.#viewed) this.#index.save('/dev/null');
  }

  /**
   * Swaps an in-memory graph for a view of `file`, which must hold this very graph (just written
   * by writeFile): usearch frees the in-memory copy at once.
   */
  becomeView(file: string): void {
    const size = this.size;
    this.#index.view(file);
    this.#viewed = true;
    if (this.size !== size) throw new Error(`graph file ${file} holds ${this.size} rows, expected ${size}`);
  }

  /**
   * Opens a saved graph, in memory ('load') or as a view ('view'), or returns null when the file is
   * missing, not the one described, or unreadable. usearch crashes the process on a damaged file,
   * so length and hash are checked first (`verified`: the caller just did).
   */
  static async open(
    file: string,
    expect: { dimension: number; metric: Metric; size: number; digest: FileDigest },
    how: 'load' | 'view',
    opts: { verified?: boolean } = {},
  ): Promise<AnnIndex | null> {
    try {
      if (!opts.verified) {
        const digest = await digestFile(file);
        if (digest.bytes !== expect.digest.bytes || digest.sha256 !== expect.digest.sha256) return null;
      }
      const native = newNativeGraph(expect.dimension, expect.metric, ANN_PARAMS.expansionSearch);
      if (how === 'view') native.view(file);
      else native.load(file);
      // A graph built with other parameters (an older version's) is rebuilt: the search efforts are tuned to these.
      if (native.dimensions() !== expect.dimension || native.size() !== expect.size || native.connectivity() !== ANN_PARAMS.connectivity) return null;
      const ann = new AnnIndex(expect.dimension, expect.metric, native);
      ann.#viewed = how === 'view';
      return ann;
    } catch {
      return null;
    }
  }
}
