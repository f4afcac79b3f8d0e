/**
 * Keeps each table's ANN index following its rows, off the request path.
 *
 * A table's state: the float32 matrix (always current: writes land there before they resolve)
 * and the segmented ANN index (behind by the rows in `pending`). Pending rows are indexed in small
 * slices between other work (setImmediate), sized to about UPKEEP_TIMINGS.sliceMs each. Searches scan pending
 * rows exactly, so the index being behind, rebuilt, still being opened or absent only costs speed.
 *
 * Saved indexes carry the sequence number they cover: every change with seq <= it is in the saved
 * graphs. `pending` keeps insertion order = seq order (a row re-written while pending keeps its
 * older place and seq), so the covered seq is the first pending row's seq - 1. At start-up the rows
 * written after the saved seq are queued again; rows deleted meanwhile are found missing from the
 * matrix and dropped from the graphs.
 */
import { SegmentedAnn } from '../../index/ann-segments.ts';
import { QuantisedTail } from '../../index/quantised-tail.ts';
import type { GraphWorker } from '../../index/graph-worker.ts';
import type { VectorMatrix } from '../../index/matrix.ts';
import type { Metric } from '../../index/metric.ts';
import type { LexicalSettings } from '../api.ts';
import { YieldSignal } from '../../platform/yield-signal.ts';

/** The upkeep's timings, in one place; each says why it is what it is. */
export const UPKEEP_TIMINGS = Object.freeze({
  /** Target duration of one indexing slice: long enough to amortise, short enough for latency. */
  sliceMs: 15,
  /**
   * While writes keep arriving, indexing takes at most this share of the time (a slice, then a
   * pause as long as it), so acknowledging writes comes first and the index catches up when they stop.
   */
  busyIndexShare: 0.5,
  /**
   * Past this many rows waiting in a table that has a quantised tail, indexing takes a growing
   * share of the time even while writes arrive (up to keepUpShare at twice this), and at twice
   * this a write to the table waits, before it commits, until the graphs have taken rows below
   * that again (IndexKeeper.roomFor). So a bulk load's tail stays under ~16k rows, and a search
   * right after the load scans ~6 MB of int8 copies (384-d) beside the graph walk instead of
   * the whole load. A bulk load is acknowledged at the pace of the graph inserts: they are the
   * bigger cost, paid as the rows come, as Chroma does, rather than after.
   */
  keepUpRows: 8_192,
  keepUpShare: 0.9,
  /**
   * A write to a table with a quantised tail is acknowledged once at most this many of the
   * table's rows wait for its graphs (IndexKeeper.caughtUp, after the commit): so a bulk load is
   * indexed as it is written, as Chroma does, and a search right after its last acknowledgement
   * walks graphs that hold nearly all of it, with ~0.4 MB of int8 copies to scan beside them,
   * instead of waiting behind the indexing of up to 2 × keepUpRows rows (p50 right after a
   * 100k load 5.6× the settled one in bench/peers.bench.ts). Small writes to an index that keeps
   * up never wait. While a write waits, indexing takes keepUpShare of the time in keepUpSliceMs
   * slices, since nothing else is coming from that writer.
   */
  ackRows: 1_024,
  /**
   * The slice length at full keep-up: a write batch holds the event loop for tens of ms once it
   * starts, so short pauses alone do not give indexing its share; longer slices do (a search
   * arriving during a bulk load waits up to this long, as it already may behind a write batch).
   */
  keepUpSliceMs: 60,
  /**
   * Writes within this many ms make the store "busy", until a search comes: the rows a write left
   * are few (it waited for the graphs past ackRows), and searches right after a bulk load waited
   * behind its 15 ms slices (p99 17-23 ms at concurrency 1 in bench/peers.bench.ts).
   */
  busyWindowMs: 250,
  /**
   * Searches within this many ms (and no writes) make the store "searching": indexing then runs
   * in slices of searchingSliceMs taking searchingIndexShare of the time, so a search waits at
   * most one short slice instead of a 15 ms one. The rows still waiting are scanned as int8
   * copies beside the graph walk meanwhile (~1 ms for 16k rows at 384-d), which is cheaper than
   * the waits were: right after a 100k load, searches at concurrency 1 waited behind back-to-back
   * 15 ms slices (p50 10× the settled one in bench/peers.bench.ts). Qdrant also leaves fresh
   * rows to a plain scan until its optimizer builds their graph in the background.
   */
  searchingWindowMs: 100,
  searchingSliceMs: 1,
  searchingIndexShare: 0.1,
  /**
   * The longest pause between those slices: the share is reckoned from a slice's wall time, which
   * on a crowded machine includes the time the process waited for a core (a 1 ms slice measured
   * as 100 ms would pause the indexer for most of a second, and the graphs fell behind for minutes).
   */
  searchingMaxPauseMs: 20,
  /**
   * While searches keep coming, or from the acknowledgement of a write that waited for the
   * graphs on, and no table has more than ackRows rows waiting for its graphs (each in a
   * quantised tail), those rows are left to the tail's scan, for at most this long, instead of
   * being inserted between the requests: they go in once searches pause for searchingWindowMs
   * (and no write was let go for busyWindowMs), or once this has passed. Right after a bulk
   * load, the inserts of the last rows the writes left (~0.4 ms a row at 100k rows, ~1 ms at
   * 1M) between the first searches made their p99 at concurrency 1 a slice long (15-17 ms
   * against 5-8 in bench/peers.bench.ts at 100k); scanning those rows reads ~0.4 MB of int8
   * copies a search. (Qdrant leaves small segments to a plain scan alike.) The same as
   * settleDeadlineMs, the longest a sealed segment waits for a quiet moment: searches that
   * never pause keep rows out of the graphs for seconds.
   */
  tailRestMs: 5_000,
  /**
   * Memory-mapped graphs fault their pages in on first touch, which in a VM costs microseconds a
   * page, and every thread's map of a graph is its own: the first few hundred searches after a
   * start walked the graphs ~10-40 % slower. So the main thread walks each graph once,
   * sequentially (~75 ms per 250k-row graph): as soon as a seal maps it, and graphs opened at
   * start in quiet moments (no search or write within warmQuietMs) or, if searches keep coming,
   * one at a time from warmDeadlineMs on. (Graphs mapped by the seals of a bulk load used to
   * wait for a quiet moment too, which never came while the index caught up or searches streamed
   * in, so the main thread's maps of them stayed cold.)
   */
  warmQuietMs: 50,
  warmDeadlineMs: 2_000,
  /**
   * A segment sealed while no writes come (the last one of a bulk load) is written to its
   * file and swapped for a mapped view of it in quiet moments (settleQuietMs), at most this long
   * after the seal, and searched from memory meanwhile. Each step takes the cores from searches:
   * usearch's save holds the main thread (~150 ms for a 250k-row graph), the block copy and hash
   * take ~1 s of a core flat out (they wait up to 30 s for gaps in searches that come meanwhile,
   * see copyFileDigested), the swap holds the main thread ~35 ms (usearch's view visits every
   * node), and the worker then reads the file through for ~100 ms while this thread walks every
   * graph alone. While writes come (a bulk load going on) it is all done at once: memory to
   * free, no search latency to protect. UpkeepOptions.settleDeadlineMs overrides it.
   */
  settleDeadlineMs: 5_000,
  /**
   * The quiet that settling such a segment waits for: longer than the warm-up's, since the work
   * lasts ~1.3 s at 1M rows; 50 ms without a request is only the gap between a client's polls.
   */
  settleQuietMs: 1_000,
  /**
   * A delta graph changed by at least this many rows since its last save, with none left to index
   * (a bulk load's end), is saved the same way (quiet moment or settleDeadlineMs), so that the
   * worker walks its file for searches instead of this thread (SegmentedAnn.searchAsync) without
   * waiting for the timed save, and this thread scans no more than a few rows beside it. Fewer
   * changes wait for that: a trickle of writes must not rewrite a big delta at every pause (a
   * cosine table's file stays walkable meanwhile, see DeltaSince).
   */
  settleDeltaChanges: 1_024,
  /**
   * After a slice throws, indexing tries again after this long, doubling per failure in a row up
   * to retryMaxMs: waiting for the next write instead left a table's rows in the scanned tail for
   * good when no write came, and retrying at once would spin on a lasting fault.
   */
  retryFirstMs: 100,
  retryMaxMs: 10_000,
});
const T = UPKEEP_TIMINGS;

/** A sealed segment with this share of dead rows is retired: its live rows are re-indexed. */
const RETIRE_DEAD_SHARE = 0.3;

/**
 * Most rows a table's quantised tail holds (~100 MB of int8 copies at 384-d). Past it (a rebuild
 * of a big table, a graph far behind a load) the tail is dropped and pending rows are scanned in
 * float32 as before; it is filled again once the pending rows are down to a quarter of this.
 */
export const TAIL_MAX_ROWS = 262_144;

export interface TableMeta {
  id: number;
  keyspace: string;
  name: string;
  dimension: number;
  metric: Metric;
  model: string | null;
  lexical: LexicalSettings;
  createdAt: string;
}

/**
 * Rows still in a table's matrix that searches leave out (expired ones, see expiry.ts): retiring
 * a segment must not hand them back for indexing, and the graphs no longer hold `unindexed` of them.
 */
export interface HiddenRows {
  has(rowId: number): boolean;
  readonly unindexed: number;
}

const NOTHING_HIDDEN: HiddenRows = { has: () => false, unindexed: 0 };

/**
 * One table in memory: its rows (the float32 matrix, always current) and the ANN index's upkeep
 * state, which only IndexKeeper changes, through the methods below; others read it.
 */
export class TableState {
  readonly meta: TableMeta;
  readonly matrix: VectorMatrix;
  /** Set by the owner of the table's expiry (vectors.ts) once a row of it has one. */
  hidden: HiddenRows = NOTHING_HIDDEN;
  #ann: SegmentedAnn | null = null;
  /** rowId -> seq of its oldest change not yet in `ann`, in seq order. */
  #pending = new Map<number, number>();
  /** int8 copies of the pending rows, for a fast scan (cosine tables only; see quantised-tail.ts). */
  readonly #tail: QuantisedTail | null;
  /** The pending rows outgrew TAIL_MAX_ROWS: the tail is empty until refillTail(). */
  #tailDropped = false;
  /** Changes to `ann` since it was last saved. */
  #changes = 0;
  #savedSeq = -1;
  #saving: Promise<void> | null = null;
  /** Set while the saved index is being checked and opened (searches scan exactly meanwhile). */
  #restoring: Promise<void> | null = null;
  /** Set once the index was found inconsistent and rebuilt, so a bug cannot make it loop. */
  #rebuilt = false;
  /** When mapped graphs opened at start must be prefaulted, quiet or not (Infinity: none wants it; see UPKEEP_TIMINGS.warmQuietMs). */
  #warmBy = Infinity;
  /** When sealed segments still searched from memory must be saved and mapped, quiet or not (UPKEEP_TIMINGS.settleDeadlineMs). */
  #settleBy = Infinity;

  constructor(meta: TableMeta, matrix: VectorMatrix) {
    this.meta = meta;
    this.matrix = matrix;
    this.#tail = meta.metric === 'cosine' ? new QuantisedTail(meta.dimension) : null;
  }

  /** The quantised copies of exactly the pending rows, or null when it does not hold them all. */
  get tail(): QuantisedTail | null {
    return this.#tail !== null && !this.#tailDropped && this.#tail.size === this.#pending.size ? this.#tail : null;
  }

  /** Refills a dropped tail once few enough rows wait (one pass over them); true when it did. */
  refillTail(): boolean {
    if (this.#tail === null || !this.#tailDropped || this.#pending.size > TAIL_MAX_ROWS / 4) return false;
    this.#tailDropped = false;
    for (const id of this.#pending.keys()) this.#toTail(id);
    return true;
  }

  #toTail(rowId: number): void {
    const tail = this.#tail;
    if (tail === null || this.#tailDropped) return;
    if (tail.size >= TAIL_MAX_ROWS && !tail.has(rowId)) {
      tail.clear();
      this.#tailDropped = true;
      return;
    }
    const v = this.matrix.get(rowId);
    if (v !== undefined) tail.set(rowId, v);
  }

  #resetTail(): void {
    this.#tail?.clear();
    this.#tailDropped = false;
  }

  /** The ANN index (null: none yet, or dropped for a rebuild); behind by the pending rows. */
  get ann(): SegmentedAnn | null {
    return this.#ann;
  }

  /** Rows not yet in the index, which searches scan exactly. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  pendingIds(): IterableIterator<number> {
    return this.#pending.keys();
  }

  /** The seq the saved index covers (-1: none saved). */
  get savedSeq(): number {
    return this.#savedSeq;
  }

  get restoring(): Promise<void> | null {
    return this.#restoring;
  }

  get saving(): Promise<void> | null {
    return this.#saving;
  }

  /** Changes to the index since it was last saved. */
  get changes(): number {
    return this.#changes;
  }

  get warmBy(): number {
    return this.#warmBy;
  }

  get settleBy(): number {
    return this.#settleBy;
  }

  /** Every change with seq <= this is in `ann`. */
  coveredSeq(currentSeq: number): number {
    for (const seq of this.#pending.values()) return seq - 1;
    return currentSeq;
  }

  /**
   * Queues rows for the index at `seq` (a row already waiting keeps its older place and seq, and
   * its tail copy takes the new vector). The rows must be in the matrix already.
   */
  queue(rowIds: Iterable<number>, seq: number): void {
    for (const id of rowIds) {
      if (!this.#pending.has(id)) this.#pending.set(id, seq);
      this.#toTail(id);
    }
  }

  unqueue(rowIds: Iterable<number>): void {
    for (const id of rowIds) if (this.#pending.delete(id)) this.#tail?.delete(id);
  }

  /** The first `n` waiting rows, oldest first (still queued). */
  nextPending(n: number): number[] {
    const ids: number[] = [];
    if (n <= 0) return ids;
    for (const id of this.#pending.keys()) {
      ids.push(id);
      if (ids.length >= n) break;
    }
    return ids;
  }

  /** The index, created empty if there is none. */
  indexOrNew(): SegmentedAnn {
    return (this.#ann ??= SegmentedAnn.create(this.meta.dimension, this.meta.metric));
  }

  /** Takes a saved index covering `seq`; nothing is queued until the caller queues what came after. */
  adopt(ann: SegmentedAnn, seq: number): void {
    this.#ann = ann;
    this.#savedSeq = seq;
    this.#pending = new Map();
    this.#resetTail();
  }

  /** Drops the index and queues `rows` (every live row, in seq order) to build it again. */
  rebuildFrom(rows: Iterable<{ id: number; seq: number }>): void {
    this.#ann = null;
    this.#pending = new Map();
    this.#resetTail();
    for (const r of rows) this.queue([r.id], r.seq);
  }

  /** Marks the one rebuild an inconsistency may cause: false when it already had it. */
  claimRebuild(): boolean {
    if (this.#rebuilt) return false;
    this.#rebuilt = true;
    return true;
  }

  changed(n: number): void {
    this.#changes += n;
  }

  /** The changes a save about to start will cover: counted as saved from now (see saveFailed). */
  takeChanges(): number {
    const n = this.#changes;
    this.#changes = 0;
    return n;
  }

  /** Known as `saving` until `save` settles. */
  trackSave(save: Promise<void>): Promise<void> {
    this.#saving = save.finally(() => (this.#saving = null));
    return this.#saving;
  }

  saved(ann: SegmentedAnn, seq: number): void {
    if (this.#ann === ann) this.#savedSeq = seq;
  }

  /** A save failed: its changes are unsaved again, and the timed saves retry, not every quiet moment. */
  saveFailed(changes: number): void {
    this.#changes += changes;
    this.#settleBy = Infinity;
  }

  /** Marks the saved index being opened until `open` settles. */
  trackRestore(open: Promise<void>): Promise<void> {
    this.#restoring = open.finally(() => (this.#restoring = null));
    return this.#restoring;
  }

  /** Mapped graphs opened at start want prefaulting by `deadline` (performance.now() ms). */
  wantWarmBy(deadline: number): void {
    this.#warmBy = deadline;
  }

  /** No mapped graph wants prefaulting any more. */
  warmed(): void {
    this.#warmBy = Infinity;
  }

  /** Sealed segments in memory must be saved and mapped by `deadline` (or an earlier one asked for). */
  wantSettledBy(deadline: number): void {
    this.#settleBy = Math.min(this.#settleBy, deadline);
  }

  /** No sealed segment waits in memory any more. */
  settled(): void {
    this.#settleBy = Infinity;
  }
}

/** What upkeep needs from the database. */
export interface IndexSource {
  /** Live rows of the table with seq > `after`, in seq order. */
  rowsSince(tableId: number, after: number): Iterable<{ id: number; seq: number }>;
  currentSeq(): number;
}

export interface UpkeepOptions {
  dir: string;
  saveEveryChanges: number;
  saveEveryMs: number;
  /** Tables smaller than this are always scanned exactly, so they get no index. */
  exactBelowRows: number;
  /** Rows per sealed ANN segment. */
  segmentRows: number;
  /** How long a sealed segment may stay in memory waiting for a quiet moment to be saved and mapped (default UPKEEP_TIMINGS.settleDeadlineMs). */
  settleDeadlineMs?: number;
  /** How long a small tail may rest while searches keep coming (default UPKEEP_TIMINGS.tailRestMs). */
  tailRestMs?: number;
  /** The tail length past which indexing keeps up with writes (default UPKEEP_TIMINGS.keepUpRows). */
  keepUpRows?: number;
  /** The most rows a write leaves waiting for the graphs when acknowledged (default UPKEEP_TIMINGS.ackRows). */
  ackRows?: number;
  /** The database's id, stored with each index so that one never serves another database. */
  tag: string;
  /** Moved on every search (searched()); copies and hashes of saved graphs wait for gaps while it moves. */
  searches?: YieldSignal;
  /** The thread that searches some graphs; told about new mapped graphs as they appear. */
  worker?: GraphWorker | null;
  log?: (msg: string, err?: unknown) => void;
}

export class IndexKeeper {
  readonly #opts: UpkeepOptions;
  readonly #src: IndexSource;
  readonly #tables = new Map<number, TableState>();
  #waiters: (() => void)[] = [];
  /** Writes waiting for their table's tail to shrink (roomFor, caughtUp), each with its condition. */
  #roomWaiters: { ready: () => boolean; resolve: () => void }[] = [];
  #scheduled = false;
  #closed = false;
  #timer: NodeJS.Timeout | null = null;
  #batch = 64;
  #cursor = 0;
  #lastWrite = -Infinity;
  /** When a write that waited for the graphs (roomFor, caughtUp) was last let go: its client's next request may be on its way. */
  #lastLetGo = -Infinity;
  #lastSearch = -Infinity;
  #lastSliceMs = 0;
  /** Since when the rows waiting rest in their tails while searches come (see tailRestMs); null while they do not. */
  #restingSince: number | null = null;
  #restTimer: NodeJS.Timeout | null = null;
  /** Slices that threw in a row (0 after one that did not): the retry's backoff. */
  #failures = 0;
  readonly #searches: YieldSignal;

  constructor(opts: UpkeepOptions, src: IndexSource) {
    this.#opts = opts;
    this.#src = src;
    this.#searches = opts.searches ?? new YieldSignal();
  }

  #name(t: TableState): string {
    return String(t.meta.id);
  }

  /**
   * Registers a table at start-up and opens its saved index in the background (hashing the graph
   * files takes ~0.6 s a GB); until then the table is searched exactly.
   */
  restore(t: TableState): void {
    this.#tables.set(t.meta.id, t);
    const open = (async () => {
      const saved = SegmentedAnn.hasSaved(this.#opts.dir, this.#name(t));
      const loaded = await SegmentedAnn.open(this.#opts.dir, this.#name(t), { dimension: t.meta.dimension, metric: t.meta.metric, tag: this.#opts.tag });
      if (this.#closed) return;
      if (loaded === null || loaded.seq > this.#src.currentSeq()) {
        // A rebuild of a big table takes minutes of slower (exact) searches: say why it happens.
        if (loaded !== null) this.#opts.log?.(`ANN index of table ${t.meta.id} is ahead of the database; rebuilding`);
        else if (saved) this.#opts.log?.(`ANN index of table ${t.meta.id} is damaged, incomplete or built with other graph parameters; rebuilding`);
        SegmentedAnn.removeFiles(this.#opts.dir, this.#name(t));
        this.#requeueAll(t);
        return;
      }
      const ann = loaded.ann;
      t.adopt(ann, loaded.seq);
      // Rows deleted after the save are not in the matrix; rows written after it are queued.
      ann.dropMissing((id) => t.matrix.has(id));
      ann.prune();
      // First the rows that retired segments had handed back before the save (the queue is not
      // saved): they are what the saved seq covers, so they go before the rows written since.
      // Left out, they stayed in graphs whose nearest entries were all dead, out of the searches' reach.
      t.queue(ann.retiredLive((id) => t.matrix.has(id)), loaded.seq + 1);
      for (const r of this.#src.rowsSince(t.meta.id, loaded.seq)) t.queue([r.id], r.seq);
      t.changed(1);
      if (ann.stats().segments > 0) t.wantWarmBy(performance.now() + T.warmDeadlineMs);
      if (this.#opts.worker) ann.shareWith(this.#opts.worker);
    })().catch((e: unknown) => {
      this.#opts.log?.(`opening the ANN index of table ${t.meta.id} failed; rebuilding`, e);
      this.#requeueAll(t);
    });
    void t.trackRestore(open).then(() => this.#schedule());
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

  upserted(t: TableState, rowIds: readonly number[], seq: number): void {
    t.queue(rowIds, seq);
    this.#lastWrite = performance.now();
    this.#schedule();
  }

  deleted(t: TableState, rowIds: readonly number[]): void {
    t.unqueue(rowIds);
    if (t.ann !== null && rowIds.length > 0) {
      t.ann.remove(rowIds);
      this.#retire(t);
      this.#changed(t, rowIds.length);
    }
    if (this.#idle()) this.#wake();
  }

  /** Whether the table's ANN index may answer stage 1 now. */
  ready(t: TableState): boolean {
    return t.ann !== null && t.restoring === null;
  }

  /** Resolves once no table that needs an index has rows waiting for it. */
  whenIndexed(): Promise<void> {
    if (this.#closed || this.#idle()) return Promise.resolve();
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.#schedule();
    });
  }

  status(): { tableId: number; keyspace: string; table: string; rows: number; indexed: number; pending: number; savedSeq: number; segments: number; inMemorySegments: number; coldSegments: number }[] {
    return [...this.#tables.values()].map((t) => {
      const big = t.matrix.size >= this.#opts.exactBelowRows;
      return {
        tableId: t.meta.id,
        keyspace: t.meta.keyspace,
        table: t.meta.name,
        rows: t.matrix.size,
        indexed: t.restoring ? 0 : (t.ann?.size ?? 0),
        // A table below the exact-search threshold has nothing waiting: it is searched exactly.
        pending: !big ? 0 : t.restoring ? t.matrix.size : t.pendingCount,
        savedSeq: t.savedSeq,
        segments: t.ann?.stats().segments ?? 0,
        inMemorySegments: t.ann?.inMemory ?? 0,
        coldSegments: t.ann?.cold ?? 0,
      };
    });
  }

  /** Saves every index with unsaved changes (after any save already under way, e.g. a seal's). */
  async saveDirty(): Promise<void> {
    await Promise.all([...this.#tables.values()].map((t) => t.saving));
    await Promise.all([...this.#tables.values()].filter((t) => t.ann !== null && t.changes > 0).map((t) => this.#save(t)));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#restTimer) clearTimeout(this.#restTimer);
    this.#wake();
    this.#releaseRoom();
    await Promise.all([...this.#tables.values()].map((t) => t.restoring));
    await Promise.all([...this.#tables.values()].map((t) => t.saving));
    await this.saveDirty();
  }

  #needsIndex(t: TableState): boolean {
    return t.restoring === null && t.pendingCount > 0 && t.matrix.size >= this.#opts.exactBelowRows;
  }

  #idle(): boolean {
    for (const t of this.#tables.values()) if (t.restoring !== null || this.#needsIndex(t)) return false;
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
    const run = () => {
      this.#scheduled = false;
      try {
        this.#slice();
        this.#failures = 0;
      } catch (e) {
        this.#opts.log?.('ANN indexing failed', e);
        // Writes waiting for the graphs must not wait on a failure: they go, and the next ones retry.
        for (const w of this.#roomWaiters.splice(0)) w.resolve();
        this.#retryLater();
      }
    };
    const share = this.#busy() ? this.#busyShare() : this.#searching() ? T.searchingIndexShare : 1;
    const searching = !this.#busy() && this.#searching();
    const paced = (this.#lastSliceMs * (1 - share)) / share;
    const pause = searching ? Math.min(T.searchingMaxPauseMs, paced) : paced;
    if (pause >= 1) setTimeout(run, pause);
    else setImmediate(run);
  }

  /** Schedules indexing again after a failed slice, backing off while failures repeat (see retryFirstMs). */
  #retryLater(): void {
    const ms = Math.min(T.retryMaxMs, T.retryFirstMs * 2 ** this.#failures++);
    // unref: a pending retry must not keep a closing process alive.
    setTimeout(() => this.#schedule(), ms).unref();
  }

  /** Writes came lately and no search since, or writes wait for the graphs (which is why no more come meanwhile). */
  #busy(): boolean {
    return (performance.now() - this.#lastWrite < T.busyWindowMs && this.#lastSearch < this.#lastWrite) || this.#roomWaiters.length > 0;
  }

  #searching(): boolean {
    return performance.now() - this.#lastSearch < T.searchingWindowMs;
  }

  /** How far the longest tail is past keepUpRows: 0 (within it) to 1 (twice as long or more). */
  #keepUp(): number {
    if (this.#roomWaiters.length > 0) return 1;
    let waiting = 0;
    for (const t of this.#tables.values()) if (t.tail !== null && this.#needsIndex(t)) waiting = Math.max(waiting, t.pendingCount);
    return Math.min(1, Math.max(0, waiting / (this.#opts.keepUpRows ?? T.keepUpRows) - 1));
  }

  /** The share of the time indexing takes while writes arrive. */
  #busyShare(): number {
    return T.busyIndexShare + this.#keepUp() * (T.keepUpShare - T.busyIndexShare);
  }

  /** Indexes one slice of one table (tables take turns), then yields to the event loop. */
  #slice(): void {
    if (this.#closed) return;
    const tables = [...this.#tables.values()].filter((t) => this.#needsIndex(t));
    if (tables.length === 0) {
      // No indexing slice to pace: the warm-up and settling steps go at their own timings.
      this.#lastSliceMs = 0;
      this.#restingSince = null;
      this.#releaseRoom();
      if (this.#idle()) this.#wake();
      this.#warm();
      return;
    }
    const t = tables[this.#cursor++ % tables.length];
    const started = performance.now();
    const ann = t.indexOrNew();
    // Sealed segments still in memory are saved at once while writes come (a bulk load: memory to
    // free, no search to protect); while searches come, in a quiet moment or at their deadline.
    if (ann.unsaved > 0 && t.saving === null && (this.#busy() || !this.#searching() || started >= t.settleBy)) void this.#save(t);
    else if (ann.unviewed > 0) this.#view(t);
    if (this.#tailsRest(tables)) {
      // Only the inserts wait: looked at again once the searches may have paused (a write schedules a slice meanwhile).
      this.#lastSliceMs = 0;
      this.#restTimer ??= setTimeout(() => {
        this.#restTimer = null;
        this.#schedule();
      }, T.searchingWindowMs);
      return;
    }
    // Never past a segment's end, so a delta holds at most segmentRows rows.
    const room = Math.max(1, this.#opts.segmentRows - ann.deltaSize);
    const ids = t.nextPending(Math.min(this.#batch, room));
    for (const block of t.matrix.gather(ids, ids.length)) ann.add(block.rowIds, block.vectors);
    t.unqueue(ids);
    t.refillTail();
    this.#releaseRoom();
    this.#retire(t);
    this.#changed(t, ids.length);
    if (ann.deltaSize >= this.#opts.segmentRows) {
      ann.seal();
      t.changed(1); // so that a timed save or the one at close writes it even if nothing else changes
      this.#settleLater(t);
    }

    const took = Math.max(0.1, performance.now() - started);
    this.#lastSliceMs = took;
    // Longer slices only while writes arrive: once they stop, searches get the loop back at once.
    const target = this.#busy() ? T.sliceMs + this.#keepUp() * (T.keepUpSliceMs - T.sliceMs) : this.#searching() ? T.searchingSliceMs : T.sliceMs;
    this.#batch = Math.max(4, Math.min(16_384, Math.round((this.#batch * target) / took)));
    if (t.pendingCount === 0) {
      this.#checkConsistent(t);
      if (this.#deltaWantsSave(t)) this.#settleLater(t);
    }
    this.#schedule();
  }

  /** Whether the rows waiting for the graphs of `tables` are left to their tails' scan now (see tailRestMs). */
  #tailsRest(tables: TableState[]): boolean {
    const ackRows = this.#opts.ackRows ?? T.ackRows;
    // Searches coming, or a write let go lately that had waited for the graphs, none waiting now:
    // after a bulk load's last acknowledgement the first search comes next, and inserts then (at
    // full share: the last write came before its ~0.5 s wait) delayed it ~100 ms at 1M rows, a
    // slice for each of its steps through HTTP until it reached the store.
    const active = this.#searching() || performance.now() - this.#lastLetGo < T.busyWindowMs;
    if (!active || this.#roomWaiters.length > 0 || !tables.every((t) => t.tail !== null && t.pendingCount <= ackRows)) {
      this.#restingSince = null;
      return false;
    }
    const now = performance.now();
    this.#restingSince ??= now;
    return now - this.#restingSince < (this.#opts.tailRestMs ?? T.tailRestMs);
  }

  /** Whether `t`'s delta should be saved for the worker to walk (see settleDeltaChanges). */
  #deltaWantsSave(t: TableState): boolean {
    return this.#opts.worker != null && t.ann !== null && t.changes >= T.settleDeltaChanges && (t.ann.deltaUnshared || t.ann.deltaBehind > 0);
  }

  /**
   * Resolves once `t` has room for more rows: at once unless the rows waiting for its graphs
   * reached twice keepUpRows (tables with a quantised tail only: the others' writes never wait).
   * A write awaits this before it commits, so nothing acknowledged waits on it.
   */
  roomFor(t: TableState): Promise<void> {
    return this.#waitFor(() => this.#within(t, 2 * (this.#opts.keepUpRows ?? T.keepUpRows) - 1));
  }

  /**
   * Resolves once at most ackRows of `t`'s rows wait for its graphs (tables with a quantised tail
   * only, as roomFor). A write awaits this after it commits, before it is acknowledged (see
   * UPKEEP_TIMINGS.ackRows).
   */
  caughtUp(t: TableState): Promise<void> {
    return this.#waitFor(() => this.#within(t, this.#opts.ackRows ?? T.ackRows));
  }

  #waitFor(ready: () => boolean): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve) => {
      this.#roomWaiters.push({ ready, resolve });
      this.#schedule();
    });
  }

  /** Whether at most `rows` of `t`'s rows wait for its graphs, or the table's writes never wait. */
  #within(t: TableState, rows: number): boolean {
    return this.#closed || t.tail === null || !this.#needsIndex(t) || t.pendingCount <= rows;
  }

  /** Lets the writes waiting in roomFor() go whose table has room now. */
  #releaseRoom(): void {
    if (this.#roomWaiters.length === 0) return;
    const still: { ready: () => boolean; resolve: () => void }[] = [];
    for (const w of this.#roomWaiters) {
      if (w.ready()) w.resolve();
      else still.push(w);
    }
    if (still.length < this.#roomWaiters.length) this.#lastLetGo = performance.now();
    this.#roomWaiters = still;
  }

  /** A search ran: warm-up and settling wait for a quiet moment, and copies of saved graphs slow down. */
  searched(): void {
    this.#lastSearch = performance.now();
    this.#searches.searchStarted();
  }

  /**
   * In a quiet moment (nothing to index, no recent request): saves a table's sealed in-memory
   * segments, or swaps saved ones for their files, or else prefaults one mapped graph that wants
   * it. Each also happens once its deadline passes, quiet or not (settleDeadlineMs,
   * warmDeadlineMs).
   */
  #warm(): void {
    const now = performance.now();
    const idleMs = now - Math.max(this.#lastSearch, this.#lastWrite);
    const quiet = idleMs >= T.warmQuietMs;
    const live = [...this.#tables.values()].filter((x) => x.ann !== null && x.restoring === null);
    const toSettle = live.find((x) => x.settleBy < Infinity && (idleMs >= T.settleQuietMs || now >= x.settleBy));
    const toWarm = live.find((x) => x.warmBy < Infinity);
    if (!toWarm && !live.some((x) => x.settleBy < Infinity)) return;
    let acted = true;
    // Besides sealed segments: a delta for the worker to walk, or changes put off while searches came (#changed).
    const wantsSave = toSettle !== undefined && (this.#deltaWantsSave(toSettle) || toSettle.changes >= this.#opts.saveEveryChanges);
    if (toSettle && toSettle.ann!.inMemory === 0 && !wantsSave) toSettle.settled(); // dropped meanwhile
    else if (toSettle && (toSettle.ann!.unsaved > 0 || wantsSave) && toSettle.saving === null) void this.#save(toSettle);
    else if (toSettle && toSettle.ann!.unviewed > 0) this.#view(toSettle);
    else if (toWarm && (quiet || now >= toWarm.warmBy)) {
      if (!toWarm.ann!.prefaultNext()) toWarm.warmed();
    } else acted = false; // nothing to do yet (not quiet, or a save under way)
    setTimeout(() => this.#schedule(), quiet && acted ? 1 : T.warmQuietMs);
  }

  /** Sealed segments of `t` in memory get saved and mapped in a quiet moment, or at their deadline. */
  #settleLater(t: TableState): void {
    t.wantSettledBy(performance.now() + (this.#opts.settleDeadlineMs ?? T.settleDeadlineMs));
  }

  /**
   * Maps the table's saved segments from their files, walks them through once (see warmQuietMs),
   * and tells the worker (see settleDeadlineMs).
   */
  #view(t: TableState): void {
    if (t.ann === null) return;
    const viewed = t.ann.viewSaved();
    if (t.ann.inMemory === 0) t.settled();
    if (viewed === 0) return;
    while (t.ann.prefaultNext());
    t.warmed();
    if (this.#opts.worker) t.ann.shareWith(this.#opts.worker);
  }

  /** Hands the live rows of mostly-dead segments back for re-indexing, and drops empty segments. */
  #retire(t: TableState): void {
    const ann = t.ann!;
    const back = ann.retire(RETIRE_DEAD_SHARE, (id) => t.matrix.has(id) && !t.hidden.has(id));
    if (back.length > 0) {
      // Not a change: the rows stay in their old segment until re-added, so the covered seq holds.
      const seq = this.#src.currentSeq();
      t.queue(back, seq);
      this.#schedule();
    }
    if (ann.prune() > 0) t.changed(1);
  }

  #changed(t: TableState, n: number): void {
    t.changed(n);
    if (t.changes < this.#opts.saveEveryChanges || t.saving !== null) return;
    // While searches come, in a quiet moment or at the deadline (settleDeadlineMs): usearch's
    // save of a big graph holds this thread (~150 ms at 250k rows, 0.65 s in a profiled run
    // among the first searches after a million-row load).
    if (this.#busy() || !this.#searching()) void this.#save(t);
    else this.#settleLater(t);
  }

  /** Once caught up, the index must hold exactly the live rows; if not, rebuild it (once). */
  #checkConsistent(t: TableState): void {
    if (t.ann === null || t.ann.size === t.matrix.size - t.hidden.unindexed || !t.claimRebuild()) return;
    this.#opts.log?.(`ANN index of table ${t.meta.id} holds ${t.ann.size} rows, table has ${t.matrix.size}; rebuilding`);
    SegmentedAnn.removeFiles(this.#opts.dir, this.#name(t));
    this.#requeueAll(t);
  }

  #requeueAll(t: TableState): void {
    t.rebuildFrom(this.#src.rowsSince(t.meta.id, -1));
  }

  #save(t: TableState): Promise<void> {
    if (t.saving) return t.saving;
    const ann = t.ann;
    if (ann === null) return Promise.resolve();
    const seq = t.coveredSeq(this.#src.currentSeq());
    const changes = t.takeChanges();
    const save = ann.save(this.#opts.dir, this.#name(t), seq, this.#opts.tag, { yieldTo: this.#searches }).then(
      () => {
        t.saved(ann, seq);
        return true;
      },
      (e: unknown) => {
        t.saveFailed(changes);
        this.#opts.log?.(`saving the ANN index of table ${t.meta.id} failed`, e);
        return false;
      },
    );
    return t.trackSave(
      save.then((saved) => {
        // Segments it wrote wait to be mapped, and one sealed while it ran to be written: by the
        // next slice if rows wait for indexing, else in a quiet moment. (`saving` is still set
        // here: #settleLater and #schedule only ask for later work.)
        if (saved && t.ann === ann && ann.inMemory > 0 && !this.#closed) {
          if (!this.#needsIndex(t)) this.#settleLater(t);
          this.#schedule();
        }
      }),
    );
  }
}
