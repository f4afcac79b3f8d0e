/**
 * Keeps each table's ANN index following its rows, off the request path.
 *
 * A table's in-memory state: the float32 matrix (always current: writes land there before they
 * resolve) and the ANN index (behind by the rows in `pending`). Pending rows are indexed in small
 * slices between other work (setImmediate), sized to about SLICE_MS each. Searches scan pending
 * rows exactly, so the index being behind, rebuilt or absent only costs speed.
 *
 * Saved indexes carry the sequence number they cover: every change with seq <= it is in the file.
 * `pending` keeps insertion order = seq order (a row re-written while pending keeps its older
 * place and seq), so the covered seq is the first pending row's seq - 1. Deletions are applied to
 * the index at once, and recorded in `deleted` only while the table has an index that a file
 * could come from; at start-up those after the saved seq are replayed, then rows written after it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { AnnIndex, sidecarPath } from '../../index/ann.ts';
import { SegmentedMatrix } from '../../index/matrix.ts';
import type { Metric } from '../../index/metric.ts';

/** Target duration of one indexing slice: long enough to amortise, short enough for latency. */
const SLICE_MS = 15;

export interface TableMeta {
  id: number;
  keyspace: string;
  name: string;
  dimension: number;
  metric: Metric;
  model: string | null;
  createdAt: string;
}

export class TableState {
  readonly meta: TableMeta;
  readonly matrix: SegmentedMatrix;
  ann: AnnIndex | null = null;
  /** rowId -> seq of its oldest change not yet in `ann`, in seq order. */
  readonly pending = new Map<number, number>();
  /** Changes to `ann` since it was last saved. */
  changes = 0;
  savedSeq = -1;
  saving: Promise<void> | null = null;
  /** Set once the index was found inconsistent and rebuilt, so a bug cannot make it loop. */
  rebuilt = false;

  constructor(meta: TableMeta) {
    this.meta = meta;
    this.matrix = new SegmentedMatrix(meta.dimension);
  }

  /** Every change with seq <= this is in `ann`. */
  coveredSeq(currentSeq: number): number {
    for (const seq of this.pending.values()) return seq - 1;
    return currentSeq;
  }
}

/** What upkeep needs from the database. */
export interface IndexSource {
  /** Live rows of the table with seq > `after`, in seq order. */
  rowsSince(tableId: number, after: number): Iterable<{ id: number; seq: number }>;
  /** Row ids deleted from the table with seq > `after`. */
  deletedSince(tableId: number, after: number): number[];
  /** Forgets deletions with seq <= `upTo` (all of them when `upTo` is Infinity). */
  pruneDeleted(tableId: number, upTo: number): void;
  currentSeq(): number;
}

export interface UpkeepOptions {
  dir: string;
  saveEveryChanges: number;
  saveEveryMs: number;
  /** Tables smaller than this are always scanned exactly, so they get no index. */
  exactBelowRows: number;
  /** The database's id, stored with each index so that one never serves another database. */
  tag: string;
  log?: (msg: string, err?: unknown) => void;
}

export class IndexKeeper {
  readonly #opts: UpkeepOptions;
  readonly #src: IndexSource;
  readonly #tables = new Map<number, TableState>();
  #waiters: (() => void)[] = [];
  #scheduled = false;
  #closed = false;
  #timer: NodeJS.Timeout | null = null;
  #batch = 64;
  #cursor = 0;

  constructor(opts: UpkeepOptions, src: IndexSource) {
    this.#opts = opts;
    this.#src = src;
    fs.mkdirSync(opts.dir, { recursive: true });
  }

  file(t: TableState): string {
    return path.join(this.#opts.dir, `${t.meta.id}.usearch`);
  }

  /** Registers a table at start-up: loads its saved index and queues what the file misses. */
  async restore(t: TableState): Promise<void> {
    this.#tables.set(t.meta.id, t);
    const file = this.file(t);
    const loaded = await AnnIndex.load(file, { dimension: t.meta.dimension, metric: t.meta.metric, tag: this.#opts.tag });
    const current = this.#src.currentSeq();
    if (loaded === null || loaded.seq > current) {
      if (loaded !== null || fs.existsSync(file)) this.#opts.log?.(`ANN index of table ${t.meta.id} is damaged or stale; rebuilding`);
      this.#removeFiles(t);
      this.#src.pruneDeleted(t.meta.id, Infinity);
      for (const r of this.#src.rowsSince(t.meta.id, -1)) t.pending.set(r.id, r.seq);
      return;
    }
    t.ann = loaded.index;
    t.savedSeq = loaded.seq;
    const gone = this.#src.deletedSince(t.meta.id, loaded.seq);
    t.ann.remove(gone);
    t.changes += gone.length;
    // After the removals: a row id SQLite reused for a later insert is re-added below.
    for (const r of this.#src.rowsSince(t.meta.id, loaded.seq)) t.pending.set(r.id, r.seq);
    this.#src.pruneDeleted(t.meta.id, loaded.seq);
  }

  /** Registers a new, empty table. */
  add(t: TableState): void {
    this.#tables.set(t.meta.id, t);
  }

  start(): void {
    if (this.#closed || this.#timer) return;
    this.#timer = setInterval(() => void this.saveDirty(), this.#opts.saveEveryMs);
    this.#timer.unref();
    this.#schedule();
  }

  /** Whether deletions from the table must be recorded for a saved index to catch up later. */
  tracksDeletes(t: TableState): boolean {
    return t.ann !== null;
  }

  upserted(t: TableState, rowIds: readonly number[], seq: number): void {
    for (const id of rowIds) if (!t.pending.has(id)) t.pending.set(id, seq);
    this.#schedule();
  }

  deleted(t: TableState, rowIds: readonly number[]): void {
    for (const id of rowIds) t.pending.delete(id);
    if (t.ann !== null && rowIds.length > 0) {
      t.ann.remove(rowIds);
      this.#changed(t, rowIds.length);
    }
    if (this.#idle()) this.#wake();
  }

  /** Resolves once no table that needs an index has rows waiting for it. */
  whenIndexed(): Promise<void> {
    if (this.#closed || this.#idle()) return Promise.resolve();
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.#schedule();
    });
  }

  status(): { keyspace: string; table: string; rows: number; indexed: number; pending: number; savedSeq: number }[] {
    return [...this.#tables.values()].map((t) => ({
      keyspace: t.meta.keyspace,
      table: t.meta.name,
      rows: t.matrix.size,
      indexed: t.ann?.size ?? 0,
      // A table below the exact-search threshold has nothing waiting: it is searched exactly.
      pending: t.matrix.size >= this.#opts.exactBelowRows ? t.pending.size : 0,
      savedSeq: t.savedSeq,
    }));
  }

  /** Saves every index with unsaved changes. */
  async saveDirty(): Promise<void> {
    await Promise.all([...this.#tables.values()].filter((t) => t.ann !== null && t.changes > 0).map((t) => this.#save(t)));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#wake();
    await Promise.all([...this.#tables.values()].map((t) => t.saving));
    await this.saveDirty();
  }

  #needsIndex(t: TableState): boolean {
    return t.pending.size > 0 && t.matrix.size >= this.#opts.exactBelowRows;
  }

  #idle(): boolean {
    for (const t of this.#tables.values()) if (this.#needsIndex(t)) return false;
    return true;
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const resolve of w) resolve();
  }

  #schedule(): void {
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      try {
        this.#slice();
      } catch (e) {
        this.#opts.log?.('ANN indexing failed', e);
      }
    });
  }

  /** Indexes one slice of one table (tables take turns), then yields to the event loop. */
  #slice(): void {
    if (this.#closed) return;
    const tables = [...this.#tables.values()].filter((t) => this.#needsIndex(t));
    if (tables.length === 0) {
      this.#wake();
      return;
    }
    const t = tables[this.#cursor++ % tables.length];
    const started = performance.now();
    const ids: number[] = [];
    for (const id of t.pending.keys()) {
      ids.push(id);
      if (ids.length >= this.#batch) break;
    }
    const [block] = t.matrix.gather(ids, ids.length);
    t.ann ??= AnnIndex.create(t.meta.dimension, t.meta.metric);
    if (block) t.ann.add(block.rowIds, block.vectors);
    for (const id of ids) t.pending.delete(id);
    this.#changed(t, ids.length);

    const took = Math.max(0.1, performance.now() - started);
    this.#batch = Math.max(16, Math.min(16_384, Math.round((this.#batch * SLICE_MS) / took)));
    if (t.pending.size === 0) this.#checkConsistent(t);
    this.#schedule();
  }

  #changed(t: TableState, n: number): void {
    t.changes += n;
    if (t.changes >= this.#opts.saveEveryChanges && t.saving === null) void this.#save(t);
  }

  /** Once caught up, the index must hold exactly the live rows; if not, rebuild it (once). */
  #checkConsistent(t: TableState): void {
    if (t.ann === null || t.ann.size === t.matrix.size || t.rebuilt) return;
    this.#opts.log?.(`ANN index of table ${t.meta.id} holds ${t.ann.size} rows, table has ${t.matrix.size}; rebuilding`);
    t.rebuilt = true;
    t.ann = null;
    this.#removeFiles(t);
    this.#src.pruneDeleted(t.meta.id, Infinity);
    for (const r of this.#src.rowsSince(t.meta.id, -1)) t.pending.set(r.id, r.seq);
  }

  #removeFiles(t: TableState): void {
    const file = this.file(t);
    fs.rmSync(file, { force: true });
    fs.rmSync(sidecarPath(file), { force: true });
  }

  #save(t: TableState): Promise<void> {
    if (t.saving) return t.saving;
    const ann = t.ann;
    if (ann === null) return Promise.resolve();
    const seq = t.coveredSeq(this.#src.currentSeq());
    const changes = t.changes;
    t.changes = 0;
    t.saving = (async () => {
      try {
        await ann.save(this.file(t), seq, this.#opts.tag);
        if (t.ann === ann) {
          t.savedSeq = seq;
          this.#src.pruneDeleted(t.meta.id, seq);
        }
      } catch (e) {
        t.changes += changes;
        this.#opts.log?.(`saving the ANN index of table ${t.meta.id} failed`, e);
      } finally {
        t.saving = null;
      }
    })();
    return t.saving;
  }
}
