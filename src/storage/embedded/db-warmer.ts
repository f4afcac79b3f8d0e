/**
 * Keeps the database pages that searches read (vector rows for re-scoring, keys, metadata and
 * text for answers) resident and memory-mapped, so a search does not wait on the disk.
 *
 * Why: the database is read through SQLite's memory map (`mmap_size`), and a page that some
 * mapping has faulted in counts as mapped memory. Kernels reclaim idle unmapped page cache first;
 * on the VMs the benches ran on, a DAMON `pageout` scheme takes *only* unmapped file
 * pages idle for ~60 s, so a row read with plain `pread` a minute ago costs a ~100 µs disk read
 * again, and a search that re-scores 100 random rows waited ~10 ms. Touching every page once
 * through a map (like the graphs' prefault) keeps them.
 *
 * The walk runs on a worker thread with read-only connections of its own (each its own map of the
 * file), which stay open so the pages stay mapped (SQLite drops a connection's map when it begins
 * a read after another connection wrote: db-warmer.worker.ts). Nothing blocks the event loop, and
 * the pass rests as long as it works, so it never takes more than half a core. While searches
 * are being served (the search count moved since its last slice) it reads one slice per
 * BUSY_REST_MS, a few per cent of a core: on two cores a search walks its graphs on both, and any
 * third thread makes it wait.
 * A pass runs after start and again when the file has grown by a tenth and then stopped growing
 * (a bulk load finished). While the file grows, a pass over the rows written since the last one
 * runs every NEW_PASS_MS: a bulk load of a million rows takes minutes, and without it the rows
 * written first sat unmapped long enough to be paged out before the load's searches began (each
 * then read its candidates from disk). Only the first `mmapBytes` of the file can be mapped
 * (SQLite caps its map at 2 GiB); pages past that are read as before, and so are pages still in
 * the WAL.
 */
import fs from 'node:fs';
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../platform/worker-url.ts';
import type { YieldSignal } from '../../platform/yield-signal.ts';
import type { WarmerData, WarmPass, WarmScope } from './db-warmer.worker.ts';

export type { WarmPass };

/** Rows per statement: a slice reads ~3 MB of 384-d vectors, so checkpoints are never held up long. */
const SLICE_ROWS = 2_000;
/** The rest between slices while searches are being served. */
const BUSY_REST_MS = 100;
/** How often the file size is looked at. */
const CHECK_MS = 5_000;
/**
 * While the file grows, the least time between passes over the rows written since: well under the
 * ~60 s that an unmapped page sat idle before the VMs' DAMON scheme paged it out. Each such pass
 * keeps a connection open (db-warmer.worker.ts), so not every CHECK_MS, and not for a trickle of
 * writes: only once the file grew by NEW_PASS_GROWTH.
 */
const NEW_PASS_MS = 20_000;
const NEW_PASS_GROWTH = 1 / 64;
/** A pass over every row is due when the file grew by this share since the last such pass (and then held still for CHECK_MS). */
const GROWTH_SHARE = 0.1;

export class DbWarmer {
  readonly #file: string;
  #worker: Worker | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** The last pass asked for (passes run one after another), and how many are not done. */
  #tail: Promise<unknown> = Promise.resolve();
  #pending = 0;
  #warmedSize = 0;
  #lastSize = -1;
  #lastNewPass = 0;
  /** The file's size when the last pass of either scope started. */
  #passedSize = 0;
  readonly #newPassMs: number;
  readonly #growthShare: number;
  /**
   * Starts warming `file` (a no-op when mmapBytes is 0: nothing would stay mapped). A pass under
   * way slows down to a slice per BUSY_REST_MS while `searches` moves. `tuning` is for tests: rows
   * per slice, the rest between slices while searches run, how often the file size is looked at,
   * NEW_PASS_MS and GROWTH_SHARE.
   */
  constructor(file: string, mmapBytes: number, searches: YieldSignal, log?: (msg: string, err?: unknown) => void, tuning: { sliceRows?: number; busyRestMs?: number; checkMs?: number; newPassMs?: number; growthShare?: number } = {}) {
    this.#file = file;
    this.#newPassMs = tuning.newPassMs ?? NEW_PASS_MS;
    this.#growthShare = tuning.growthShare ?? GROWTH_SHARE;
    if (mmapBytes <= 0) return;
    try {
      const workerData: WarmerData = { file, mmapBytes, sliceRows: tuning.sliceRows ?? SLICE_ROWS, busyRestMs: tuning.busyRestMs ?? BUSY_REST_MS, searches: searches.shared };
      this.#worker = startWorker('storage/embedded/db-warmer.worker', { workerData });
      this.#worker.unref();
      const fail = (e?: unknown) => {
        if (this.#worker === null) return;
        this.#worker = null;
        log?.('database warm-up thread stopped; searches read rows from disk when they are not cached', e);
      };
      this.#worker.on('error', fail);
      this.#worker.on('exit', () => fail());
    } catch (e) {
      log?.('database warm-up thread could not start', e);
      return;
    }
    this.#timer = setInterval(() => this.#check(), tuning.checkMs ?? CHECK_MS);
    this.#timer.unref();
    void this.warm();
  }

  /**
   * A pass over the searched tables that starts after any pass under way; resolves when it is
   * done. `scope` 'new': only the rows written since the last pass (and that pass's own).
   */
  warm(scope: WarmScope = 'all'): Promise<WarmPass> {
    const pass = this.#tail.then(() => this.#pass(scope));
    this.#tail = pass;
    this.#pending++;
    return pass.finally(() => this.#pending--);
  }

  #pass(scope: WarmScope): Promise<WarmPass> {
    const w = this.#worker;
    if (!w) return Promise.resolve({ rows: 0, ms: 0, error: 'no warm-up thread' });
    const size = this.#size();
    this.#passedSize = size;
    return new Promise<WarmPass>((resolve) => {
      const onExit = () => resolve({ rows: 0, ms: 0, error: 'warm-up thread exited' });
      w.once('exit', onExit);
      w.once('message', (m: WarmPass) => {
        w.off('exit', onExit);
        if (scope === 'all') this.#warmedSize = size;
        resolve(m);
      });
      w.postMessage(scope);
    });
  }

  #check(): void {
    if (this.#pending > 0) return;
    const size = this.#size();
    const grew = this.#lastSize >= 0 && size > this.#lastSize;
    this.#lastSize = size;
    if (!grew) {
      if (size > this.#warmedSize * (1 + this.#growthShare)) void this.warm();
    } else if (Date.now() - this.#lastNewPass >= this.#newPassMs && size > this.#passedSize * (1 + NEW_PASS_GROWTH)) {
      this.#lastNewPass = Date.now();
      void this.warm('new');
    }
  }

  #size(): number {
    try {
      return fs.statSync(this.#file).size;
    } catch {
      return 0;
    }
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    const w = this.#worker;
    this.#worker = null;
    if (w) await w.terminate();
  }
}
