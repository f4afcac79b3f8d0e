/**
 * The approximate stage-1 index: a usearch HNSW graph over 16-bit copies of a table's vectors,
 * keyed by row id. It is derived state: the caller re-scores what it returns with the
 * full-precision vectors, and rebuilds it whenever `load` cannot vouch for a saved file.
 *
 * bfloat16 rather than IEEE half: the same size and, measured here, the same recall, but float32's
 * exponent range (f16 turns any component above 65504 into infinity, which breaks dot-product and
 * Euclidean tables of unnormalised vectors) and faster to build on CPUs with AVX-512 BF16.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, mkdirSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Index, ScalarKind } from 'usearch';
import { usearchMetric } from './exact.ts';
import { METRICS, type Metric } from './metric.ts';
import { writeFileDurably } from '../durable-file.ts';

/**
 * Graph parameters. usearch searches with max(expansion_search, k), so asking for more than 512
 * candidates widens the search by itself. Recall@10 of the best 100 candidates, measured on
 * clustered Gaussian data (structureless neighbourhoods, a hard case): expansion_search matters
 * far more than expansion_add or connectivity. 1M x 384 (built with expansion_add 64): 0.91 at
 * 128, 0.94 at 256, 0.958 at 512, all around 1 ms a query. expansion_add 128 would triple the
 * build time (the slow part: ~2.7k rows/s at 1M x 384 on two cores) for about +0.02.
 */
export const ANN_PARAMS = Object.freeze({ connectivity: 16, expansionAdd: 64, expansionSearch: 512 });

const FORMAT = 'vss-usearch-bf16-1';

/** Written beside the index file, after it: what the file covers and how to recognise it intact. */
export interface AnnSidecar {
  format: string;
  /** Every change with a sequence number <= seq is reflected in the file. */
  seq: number;
  size: number;
  dimension: number;
  metric: Metric;
  bytes: number;
  sha256: string;
  /** Identifies the database the index was built from (an index from another one is useless). */
  tag: string;
}

export const sidecarPath = (indexPath: string): string => indexPath.replace(/\.usearch$/, '') + '.json';

export class AnnIndex {
  readonly dimension: number;
  readonly metric: Metric;
  readonly #index: Index;

  private constructor(dimension: number, metric: Metric, index: Index) {
    this.dimension = dimension;
    this.metric = metric;
    this.#index = index;
  }

  static create(dimension: number, metric: Metric): AnnIndex {
    return new AnnIndex(dimension, metric, AnnIndex.#native(dimension, metric));
  }

  static #native(dimension: number, metric: Metric): Index {
    return new Index({
      dimensions: dimension,
      metric: usearchMetric(metric),
      quantization: ScalarKind.BF16,
      connectivity: ANN_PARAMS.connectivity,
      expansion_add: ANN_PARAMS.expansionAdd,
      expansion_search: ANN_PARAMS.expansionSearch,
      multi: false,
    });
  }

  /** How many rows the graph holds. */
  get size(): number {
    return this.#index.size();
  }

  has(rowId: number): boolean {
    return this.#index.contains(BigInt(rowId)) as boolean;
  }

  /**
   * Inserts or replaces rows (`vectors` holds rowIds.length * dimension values). usearch refuses a
   * key it already holds, so every key is removed first (a no-op for new keys).
   */
  add(rowIds: ArrayLike<number>, vectors: Float32Array): void {
    if (rowIds.length === 0) return;
    if (vectors.length !== rowIds.length * this.dimension) throw new RangeError(`${rowIds.length} rows need ${rowIds.length * this.dimension} values, got ${vectors.length}`);
    const keys = BigUint64Array.from(rowIds as ArrayLike<number>, (x) => BigInt(x));
    this.#index.remove(keys);
    this.#index.add(keys, vectors, 0);
  }

  remove(rowIds: ArrayLike<number>): void {
    if (rowIds.length === 0) return;
    this.#index.remove(BigUint64Array.from(rowIds as ArrayLike<number>, (x) => BigInt(x)));
  }

  /** Row ids of about the `k` nearest rows, nearest first. */
  search(query: Float32Array, k: number): number[] {
    const n = Math.min(k, this.size);
    if (n <= 0) return [];
    const found = this.#index.search(query, n, 1);
    return Array.from(found.keys, Number);
  }

  /**
   * Writes the index to `file` atomically (temp file, fsync, rename), then its sidecar the same
   * way. A crash between the two leaves a sidecar whose hash does not match: `load` rejects it.
   */
  save(file: string, seq: number, tag = ''): Promise<AnnSidecar> {
    // The snapshot is taken synchronously, before this returns, so it matches `seq` exactly
    // even though the caller goes on changing the index while the file is synced and hashed.
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const size = this.size;
    try {
      mkdirSync(path.dirname(file), { recursive: true });
      this.#index.save(tmp);
    } catch (e) {
      rmSync(tmp, { force: true });
      return Promise.reject(e);
    }
    return this.#finishSave(file, tmp, { format: FORMAT, seq, size, dimension: this.dimension, metric: this.metric, tag });
  }

  async #finishSave(file: string, tmp: string, partial: Omit<AnnSidecar, 'bytes' | 'sha256'>): Promise<AnnSidecar> {
    try {
      await fsyncFile(tmp);
      const { bytes, sha256 } = await hashFile(tmp);
      await fs.rename(tmp, file);
      const sidecar: AnnSidecar = { ...partial, bytes, sha256 };
      // Also fsyncs the directory, making the index file's rename above durable too.
      await writeFileDurably(sidecarPath(file), JSON.stringify(sidecar));
      return sidecar;
    } finally {
      await fs.rm(tmp, { force: true });
    }
  }

  /**
   * Loads a saved index, or null when it is missing, damaged or not the one expected. usearch
   * crashes the process on a corrupt file, so the file's length and hash are checked first.
   */
  static async load(file: string, expect: { dimension: number; metric: Metric; tag?: string }): Promise<{ index: AnnIndex; seq: number } | null> {
    let sidecar: AnnSidecar;
    try {
      sidecar = JSON.parse(await fs.readFile(sidecarPath(file), 'utf8')) as AnnSidecar;
    } catch {
      return null;
    }
    if (
      !sidecar ||
      sidecar.format !== FORMAT ||
      sidecar.dimension !== expect.dimension ||
      sidecar.metric !== expect.metric ||
      !METRICS.includes(sidecar.metric) ||
      (expect.tag !== undefined && sidecar.tag !== expect.tag) ||
      !Number.isSafeInteger(sidecar.seq) ||
      !Number.isSafeInteger(sidecar.size) ||
      typeof sidecar.sha256 !== 'string'
    ) {
      return null;
    }
    try {
      const { bytes, sha256 } = await hashFile(file);
      if (bytes !== sidecar.bytes || sha256 !== sidecar.sha256) return null;
      const native = AnnIndex.#native(expect.dimension, expect.metric);
      native.load(file);
      if (native.dimensions() !== expect.dimension || native.size() !== sidecar.size) return null;
      return { index: new AnnIndex(expect.dimension, expect.metric, native), seq: sidecar.seq };
    } catch {
      return null;
    }
  }
}

async function hashFile(file: string): Promise<{ bytes: number; sha256: string }> {
  const h = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    h.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: h.digest('hex') };
}

async function fsyncFile(file: string): Promise<void> {
  const fh = await fs.open(file, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

