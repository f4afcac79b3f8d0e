/**
 * A table's approximate stage-1 index as segments, the way Qdrant and Lucene keep theirs: sealed
 * graphs that never change (written once, then memory-mapped read-only, so they cost no anonymous
 * memory and no load time) and one in-memory delta graph that takes new rows until it is full and
 * is sealed in turn.
 *
 * A sealed graph cannot drop a row, so a row that is deleted, or re-indexed into the delta with a
 * new vector, is marked dead in the sealed segment that holds it; searches skip dead entries.
 * A segment that is mostly dead is retired: its live rows are re-indexed into the delta, and once
 * none is left the segment is dropped (see IndexKeeper). Smaller graphs also search better than one
 * big one at the same effort (figures with the graph parameters, graph-params.ts), at the cost of
 * one graph walk per segment.
 *
 * Saved state: one manifest per table (`<name>.json`: the change sequence it covers, every
 * segment's graph file, row-id file, digests and dead rows, and the delta's files), written last,
 * atomically; files no manifest names are removed after a successful save.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { writeFileDurably } from '../platform/durable-file.ts';
import { DIR_MODE } from '../platform/private-dir.ts';
import { digestBytes, digestFiles, type FileDigest } from '../platform/file-digest.ts';
import type { YieldSignal } from '../platform/yield-signal.ts';
import { AnnIndex } from './ann.ts';
import { DeltaSince } from './delta-since.ts';
import { ANN_PARAMS } from './graph-params.ts';
import { claimGraph, newGraphClaims, type GraphClaims } from './graph-claims.ts';
import type { GraphWorker, WorkerAnswer } from './graph-worker.ts';
import { METRICS, type Metric } from './metric.ts';

const FORMAT = 'vss-ann-segments-1';
/** Identifies a segment to a worker thread across all tables of the process. */
let nextUid = 1;
/**
 * Search effort per graph (candidates explored) when a search gives no `ef`: the least that kept
 * recall@10 >= 0.98 with 100 candidates re-scored, at 100k rows (one graph: 0.996 at 128, 1.000
 * at 256, bench/peers.bench.ts's curve in docs/PERFORMANCE.md) and at 1M (four graphs: 0.98-0.99).
 */
const DEFAULT_EFFORT = 128;
/** Rows removed from the delta before it may be retired (below, a walk passes few removed nodes). */
const MIN_DELTA_RETIRE = 1_024;
/**
 * The most rows a delta's saved file may lack or hold stale and still be walked by the worker for
 * it, the rest scanned here (DeltaSince: ~1.5 MB of int8 copies at 384-d). A delta past that many
 * changes since its save wants saving again anyway (settleDeltaChanges, index-upkeep.ts).
 */
const MAX_DELTA_SINCE = 4_096;
/** The most a search may ask each graph to explore (`ef`): ~40 ms a walk at 250k rows. */
export const MAX_SEARCH_EFFORT = 4_096;

interface Segment {
  graph: AnnIndex;
  /** The row ids the graph holds (a sealed graph never changes). */
  ids: Float64Array;
  dead: Set<number>;
  /** Set once the segment's files are written (the manifest names them). */
  saved: { file: string; digest: FileDigest; idsDigest: FileDigest } | null;
  /** Where its file is once saved (what a worker thread maps), and its id there. */
  path: string | null;
  uid: number;
  /** Its live rows have been handed back for re-indexing. */
  retired: boolean;
  /** Its mapped pages have been touched once (prefaultNext). */
  prefaulted?: boolean;
}

interface ManifestSegment {
  file: string;
  size: number;
  digest: FileDigest;
  idsDigest: FileDigest;
  dead: number[];
  retired: boolean;
}

interface Manifest {
  format: string;
  seq: number;
  tag: string;
  dimension: number;
  metric: Metric;
  segments: ManifestSegment[];
  delta: { file: string; size: number; digest: FileDigest; idsDigest: FileDigest } | null;
}

export interface SegmentedAnnStats {
  segments: number;
  deltaRows: number;
  deadRows: number;
}

export class SegmentedAnn {
  readonly dimension: number;
  readonly metric: Metric;
  readonly #sealed: Segment[] = [];
  #delta: AnnIndex;
  #deltaKeys = new Set<number>();
  /**
   * Rows removed from the delta, less the new rows added since (usearch gives those the removed
   * rows' nodes): its walks pass through these nodes without returning them.
   */
  #deltaRemoved = 0;
  /** The delta changed since it was last written. */
  #deltaDirty = false;
  #savedDelta: { file: string; size: number; digest: FileDigest; idsDigest: FileDigest } | null = null;
  /**
   * The delta's saved file, which a worker may walk in its place: with what changed since
   * (`since`, cosine tables) while that stays within MAX_DELTA_SINCE, else only while nothing
   * changed (`since` null); null from then on (#deltaChanged).
   */
  #deltaShare: { uid: number; path: string; since: DeltaSince | null } | null = null;
  /** What changed in the delta since the snapshot a save in progress is writing (cosine tables), for sharing that file once written. */
  #savingSince: DeltaSince | null = null;
  #generation = 0;

  private constructor(dimension: number, metric: Metric) {
    this.dimension = dimension;
    this.metric = metric;
    this.#delta = AnnIndex.create(dimension, metric);
  }

  static create(dimension: number, metric: Metric): SegmentedAnn {
    return new SegmentedAnn(dimension, metric);
  }

  /** Live rows: every segment's rows less its dead ones, plus the delta's. */
  get size(): number {
    let n = this.#delta.size;
    for (const s of this.#sealed) n += s.ids.length - s.dead.size;
    return n;
  }

  get deltaSize(): number {
    return this.#delta.size;
  }

  /** Whether the delta has rows that a worker cannot walk for it (it changed since its last save). */
  get deltaUnshared(): boolean {
    return this.#delta.size > 0 && this.#deltaShare === null;
  }

  /** How many rows the delta's shared file lacks or holds stale (scanned and skipped beside the worker's walk of it); 0 when none is shared. */
  get deltaBehind(): number {
    return this.#deltaShare?.since?.changes ?? 0;
  }

  stats(): SegmentedAnnStats {
    let deadRows = 0;
    for (const s of this.#sealed) deadRows += s.dead.size;
    return { segments: this.#sealed.length, deltaRows: this.#delta.size, deadRows };
  }

  /**
   * The delta differs from its saved file from now on (the trackers have recorded how): it must be
   * saved again, and a worker may walk that file for it only while the changes stay few.
   */
  #deltaChanged(): void {
    this.#deltaDirty = true;
    const share = this.#deltaShare;
    if (share !== null && (share.since === null || share.since.changes > MAX_DELTA_SINCE)) this.#deltaShare = null;
    if (this.#savingSince !== null && this.#savingSince.changes > MAX_DELTA_SINCE) this.#savingSince = null;
  }

  /** A new delta graph took the old one's place (sealed or dropped): no file is a snapshot of it. */
  #deltaReplaced(): void {
    this.#deltaDirty = true;
    this.#deltaShare = null;
    this.#savingSince = null;
  }

  /** Inserts or replaces rows (into the delta; older copies in sealed segments die). */
  add(rowIds: ArrayLike<number>, vectors: Float32Array): void {
    if (rowIds.length === 0) return;
    this.#markDead(rowIds);
    const inDelta = (id: number) => this.#deltaKeys.has(id);
    this.#deltaShare?.since?.added(rowIds, vectors, inDelta);
    this.#savingSince?.added(rowIds, vectors, inDelta);
    this.#delta.add(rowIds, vectors);
    const before = this.#deltaKeys.size;
    for (let i = 0; i < rowIds.length; i++) this.#deltaKeys.add(rowIds[i]);
    this.#deltaRemoved = Math.max(0, this.#deltaRemoved - (this.#deltaKeys.size - before));
    this.#deltaChanged();
  }

  remove(rowIds: ArrayLike<number>): void {
    if (rowIds.length === 0) return;
    this.#markDead(rowIds);
    const inDelta: number[] = [];
    for (let i = 0; i < rowIds.length; i++) if (this.#deltaKeys.delete(rowIds[i])) inDelta.push(rowIds[i]);
    if (inDelta.length > 0) {
      this.#deltaShare?.since?.removed(inDelta);
      this.#savingSince?.removed(inDelta);
      this.#delta.remove(inDelta);
      this.#deltaRemoved += inDelta.length;
      this.#deltaChanged();
    }
  }

  /**
   * Row ids of about the `k` nearest live rows, nearest first by the graphs' own distances. Each
   * graph is walked with effort `ef`, or DEFAULT_EFFORT, and never narrower than `k` (see #effort).
   * `beside`: rows found elsewhere by the same distance (a quantised tail's scan of rows the graphs
   * lack), ranked with the graphs' answers for the `k` places.
   */
  search(query: Float32Array, k: number, ef?: number, beside?: ScoredKeys): number[] {
    const effort = this.#effort(k, ef);
    const found: Found[] = [];
    for (const s of this.#sealed) if (!s.retired) collect(found, s.graph.searchScored(query, effort), s.dead);
    collect(found, this.#delta.searchScored(query, effort), null);
    if (beside) collect(found, beside, null);
    return best(found, k);
  }

  /**
   * The same, on both cores: the sealed graphs the worker has open are shared with it, and each
   * thread walks the next one nobody has started (graph-worker.ts). Graphs the worker has not
   * opened yet are walked here first, and so is the delta unless it is unchanged since its save
   * or, in a cosine table, changed by a few rows since, which this thread then scans (DeltaSince):
   * the worker walks that file in its place. While the worker has other searches queued
   * (concurrent queries), this thread takes at most half of the shared graphs: it also does all
   * the HTTP, SQL and re-scoring work, so taking the worker's share as well lowered throughput
   * (1M rows, concurrency 16: 139 against 201 QPS in bench/vectors.bench.ts). A table with one
   * graph (up to a segment's rows) leaves it to the worker, so that its walks, the biggest part of
   * this thread's time per search at 100k rows (~40% in bench/peers.bench.ts's profile), go to
   * the other core; unless `alone` (this thread waited for work before the search: no other
   * request was queued, see LoopIdle) and the worker has nothing queued either: then the walk is
   * here, which saves a search the two messages and the worker's wake-up (100k rows, concurrency
   * 1: p50 0.95-1.01 against 1.17-1.28 ms in bench/peers.bench.ts's curve).
   */
  async searchAsync(query: Float32Array, k: number, worker: GraphWorker, ef?: number, alone = false, beside?: ScoredKeys): Promise<number[]> {
    this.shareWith(worker);
    // Only graphs the worker has read through, and never while it syncs: a search would queue behind that.
    const shared: SharedGraph[] = [];
    if (!worker.syncing && worker.alive) {
      for (const s of this.#sealed) if (!s.retired && s.path !== null && s.graph.viewed && worker.isReady(s.uid)) shared.push(s);
      const d = this.#deltaShare;
      if (d !== null && worker.isReady(d.uid)) shared.push({ uid: d.uid, graph: this.#delta, dead: d.since?.stale ?? null, isDelta: true, since: d.since });
    }
    if (shared.length === 0) return this.search(query, k, ef, beside);
    if (alone && worker.pending === 0 && shared.length === 1 && this.#onlyGraph(shared[0])) return this.search(query, k, ef, beside);
    const effort = this.#effort(k, ef);
    const claims = newGraphClaims();
    const pending = worker.search(shared.map((s) => s.uid), query, effort, claims);
    return this.#walkShared(query, effort, k, shared, claims, pending, worker, beside);
  }

  async #walkShared(query: Float32Array, effort: number, k: number, shared: SharedGraph[], claims: GraphClaims, pending: Promise<WorkerAnswer[]>, worker: GraphWorker, beside: ScoredKeys | undefined): Promise<number[]> {
    const found: Found[] = [];
    if (beside) collect(found, beside, null);
    for (const s of this.#sealed) if (!s.retired && !shared.includes(s)) collect(found, s.graph.searchScored(query, effort), s.dead);
    const deltaShared = shared.find((s) => s.isDelta === true);
    if (!deltaShared) collect(found, this.#delta.searchScored(query, effort), null);
    // The rows the delta's file lacks or holds stale (its answers skip those) are scanned here.
    if (deltaShared?.since) collect(found, deltaShared.since.search(query, k), null);
    const walked = new Array<boolean>(shared.length).fill(false);
    // A lone graph is the worker's unless its queue runs long (then it is the slower side): this
    // thread cannot tell a lone search from one of many (it handles them one after another), and
    // leaving it the walk costs a single search one message each way.
    const most = shared.length === 1 ? (worker.pending > MAX_WORKER_QUEUE ? 1 : 0) : worker.pending > 1 ? Math.ceil(shared.length / 2) : shared.length;
    for (let mine = 0; mine < most; mine++) {
      const i = claimGraph(claims, shared.length);
      if (i < 0) break;
      // The delta walked here is the live graph, not its file: none of its rows is stale.
      collect(found, shared[i].graph.searchScored(query, effort), shared[i].isDelta === true ? null : shared[i].dead);
      walked[i] = true;
    }
    for (const a of await pending) {
      if ('missing' in a) continue;
      // The segment may have been dropped, or the delta's file given up, while the worker searched: its rows are elsewhere now.
      if (!this.#stillShared(shared[a.index])) continue;
      walked[a.index] = true;
      collect(found, a, shared[a.index].dead);
    }
    // Graphs the worker took but could not open, or took and died on, and a delta whose file was
    // given up meanwhile: walked here as they are now (a delta sealed meanwhile, and the new delta too).
    shared.forEach((s, i) => {
      if (walked[i]) return;
      if (s.isDelta !== true) {
        if (this.#sealed.includes(s as Segment)) collect(found, s.graph.searchScored(query, effort), s.dead);
        return;
      }
      collect(found, s.graph.searchScored(query, effort), this.#sealed.find((x) => x.graph === s.graph)?.dead ?? null);
      if (s.graph !== this.#delta) collect(found, this.#delta.searchScored(query, effort), null);
    });
    return best(found, k);
  }

  /** Whether a search walks this graph and no other (an empty delta aside). */
  #onlyGraph(g: SharedGraph): boolean {
    return this.#sealed.every((s) => s.retired || s === g) && (g.isDelta === true || this.#delta.size === 0);
  }

  /** Whether a graph shared with the worker for a search is still part of this index as the worker saw it. */
  #stillShared(s: SharedGraph): boolean {
    return s.isDelta === true ? this.#deltaShare?.uid === s.uid : this.#sealed.includes(s as Segment);
  }

  /**
   * How many results to ask each graph for, which is how wide usearch walks it (the graphs'
   * expansion_search is only a floor, MIN_WALK): the search's `ef` when given, else
   * DEFAULT_EFFORT; never fewer than the `k` candidates wanted.
   */
  #effort(k: number, ef?: number): number {
    const effort = ef === undefined ? DEFAULT_EFFORT : Math.min(MAX_SEARCH_EFFORT, Math.floor(ef));
    return Math.max(k, ANN_PARAMS.expansionSearch, effort);
  }

  /** Tells the worker which of this table's files to have open, when that changed (ahead of searches: it maps them then). */
  shareWith(worker: GraphWorker): void {
    const graphs: { uid: number; path: string }[] = this.#sealed.filter((s) => s.path !== null && s.graph.viewed).map((s) => ({ uid: s.uid, path: s.path! }));
    if (this.#deltaShare !== null) graphs.push(this.#deltaShare);
    const key = graphs.map((s) => s.uid).join(',');
    if (workerSynced.get(worker)?.get(this) === key) return;
    let mine = workerSynced.get(worker);
    if (!mine) workerSynced.set(worker, (mine = new Map()));
    mine.set(this, key);
    worker.sync(
      this,
      graphs.map((s) => ({ id: s.uid, file: s.path, dimension: this.dimension, metric: this.metric })),
    );
  }

  /** Prefaults the next sealed graph not yet prefaulted; false when none is left (see AnnIndex.prefault). */
  prefaultNext(): boolean {
    const s = this.#sealed.find((x) => x.graph.viewed && !x.prefaulted);
    if (!s) return false;
    s.prefaulted = true;
    s.graph.prefault();
    return true;
  }

  /** Turns the delta into a sealed segment (still in memory until the next save) and starts a new one. */
  seal(): void {
    if (this.#delta.size === 0) return;
    this.#sealed.push({ graph: this.#delta, ids: Float64Array.from(this.#deltaKeys), dead: new Set(), saved: null, path: null, uid: nextUid++, retired: false });
    this.#delta = AnnIndex.create(this.dimension, this.metric);
    this.#deltaKeys = new Set();
    this.#deltaRemoved = 0;
    this.#deltaReplaced();
  }

  /**
   * Segments whose dead share reached `share`: marks them retired and returns their live row ids,
   * which the caller re-indexes (each one re-added kills its old copy; an all-dead segment is
   * dropped by `prune`).
   */
  retire(share: number, isLive: (rowId: number) => boolean): number[] {
    const out: number[] = [];
    // A delta mostly removed (a mass expiry) is sealed and retired the same way, though its dead
    // rows left no entry (usearch removes them, but its walks still pass their nodes).
    const removed = this.#deltaRemoved;
    if (removed >= MIN_DELTA_RETIRE && removed >= (this.#delta.size + removed) * share) {
      if (this.#delta.size === 0) {
        this.#delta = AnnIndex.create(this.dimension, this.metric);
        this.#deltaReplaced();
      } else {
        this.seal();
        const s = this.#sealed[this.#sealed.length - 1];
        s.retired = true;
        for (const id of s.ids) if (isLive(id)) out.push(id);
      }
      this.#deltaRemoved = 0;
    }
    for (const s of this.#sealed) {
      if (s.retired || s.dead.size < s.ids.length * share) continue;
      s.retired = true;
      for (const id of s.ids) if (!s.dead.has(id) && isLive(id)) out.push(id);
    }
    return out;
  }

  /**
   * Live rows of segments retired earlier and not yet re-added: `retire` handed them back once,
   * but the queue they went to is not saved, so a restart asks for them again here.
   */
  retiredLive(isLive: (rowId: number) => boolean): number[] {
    const out: number[] = [];
    for (const s of this.#sealed) {
      if (!s.retired) continue;
      for (const id of s.ids) if (!s.dead.has(id) && isLive(id)) out.push(id);
    }
    return out;
  }

  /** Drops segments with no live row left; returns how many. */
  prune(): number {
    let n = 0;
    for (let i = this.#sealed.length - 1; i >= 0; i--) {
      const s = this.#sealed[i];
      if (s.dead.size >= s.ids.length) {
        this.#sealed.splice(i, 1);
        n++;
      }
    }
    return n;
  }

  /** Marks every row `isLive` rejects as gone (deletions the saved state did not see). */
  dropMissing(isLive: (rowId: number) => boolean): void {
    const gone: number[] = [];
    for (const s of this.#sealed) for (const id of s.ids) if (!s.dead.has(id) && !isLive(id)) gone.push(id);
    for (const id of this.#deltaKeys) if (!isLive(id)) gone.push(id);
    this.remove(gone);
  }

  /**
   * Writes what changed since the last save and then the manifest, under `dir` with file names
   * starting `name`. New sealed segments stay in memory until viewSaved() maps their files.
   * The snapshot is taken synchronously, so `seq` must be what the graphs cover at the call.
   * `yieldTo`: the files' copies and hashes wait for gaps in the searches that move its count.
   */
  async save(dir: string, name: string, seq: number, tag: string, opts: { yieldTo?: YieldSignal } = {}): Promise<void> {
    await fsp.mkdir(dir, { recursive: true, mode: DIR_MODE });
    const fresh = this.#sealed.filter((s) => s.saved === null);
    const writes = fresh.map((s) => {
      const file = `${name}-${process.pid}-${Date.now()}-${this.#generation++}.seg.usearch`;
      return { s, file, graph: s.graph.writeFile(path.join(dir, file), { forMapping: true, yieldTo: opts.yieldTo }), ids: writeIds(path.join(dir, file), s.ids) };
    });
    let delta = this.#savedDelta;
    let deltaFile: string | null = null;
    let deltaWrite: Promise<void> | null = null;
    // The delta's two writes, each awaited on failure: deltaWrite settles at the first rejection.
    let deltaParts: Promise<FileDigest>[] = [];
    let since: DeltaSince | null = null;
    if (this.#deltaDirty) {
      this.#deltaDirty = false;
      if (this.#delta.size === 0) {
        delta = null;
        // Its last file goes once this save is named (removeUnnamed): nothing left for a worker to walk.
        this.#deltaShare = null;
      } else {
        // The file is the delta as of now (usearch writes it before this call returns): what changes from here on is tracked.
        since = this.#savingSince = this.metric === 'cosine' ? new DeltaSince(this.dimension) : null;
        const file = `${name}-${process.pid}-${Date.now()}-${this.#generation++}.delta.usearch`;
        deltaFile = file;
        const size = this.#delta.size;
        const graph = this.#delta.writeFile(path.join(dir, file), { yieldTo: opts.yieldTo });
        const ids = writeIds(path.join(dir, file), Float64Array.from(this.#deltaKeys));
        deltaParts = [graph, ids];
        deltaWrite = Promise.all([graph, ids]).then(([digest, idsDigest]) => {
          delta = { file, size, digest, idsDigest };
        });
      }
    }
    const segmentsAtCall = [...this.#sealed];
    const deadAtCall = segmentsAtCall.map((s) => [...s.dead]);
    let manifest: Manifest;
    try {
      for (const w of writes) {
        const [digest, idsDigest] = await Promise.all([w.graph, w.ids]);
        w.s.saved = { file: w.file, digest, idsDigest };
        w.s.path = path.join(dir, w.file);
      }
      await deltaWrite;
      manifest = {
        format: FORMAT,
        seq,
        tag,
        dimension: this.dimension,
        metric: this.metric,
        segments: segmentsAtCall.map((s, i) => ({
          file: s.saved!.file,
          size: s.ids.length,
          digest: s.saved!.digest,
          idsDigest: s.saved!.idsDigest,
          dead: deadAtCall[i],
          retired: s.retired,
        })),
        delta,
      };
      await writeFileDurably(manifestPath(dir, name), JSON.stringify(manifest));
    } catch (e) {
      // A failed save (a full disk) leaves no file behind that no manifest names: each retry would
      // otherwise add one, holding the space freed for the next. The writes still running finish
      // first (and their rejections are handled here, not left to crash the process).
      this.#deltaDirty ||= deltaWrite !== null;
      if (this.#savingSince === since) this.#savingSince = null;
      await Promise.allSettled([...writes.flatMap((w) => [w.graph, w.ids]), ...deltaParts, ...(deltaWrite ? [deltaWrite] : [])]);
      const unnamed = [...writes.filter((w) => w.s.saved?.file !== w.file).map((w) => w.file), ...(deltaFile ? [deltaFile] : [])];
      await Promise.all(unnamed.flatMap((f) => [path.join(dir, f), path.join(dir, idsFile(f))]).map((f) => fsp.rm(f, { force: true })));
      throw e;
    }
    this.#savedDelta = delta;
    // The file is the delta, or is behind it by changes tracked since: a worker may walk it instead.
    if (deltaFile !== null && delta?.file === deltaFile) {
      if (since !== null && this.#savingSince === since) this.#deltaShare = { uid: nextUid++, path: path.join(dir, deltaFile), since };
      else if (!this.#deltaDirty) this.#deltaShare = { uid: nextUid++, path: path.join(dir, deltaFile), since: null };
      if (this.#savingSince === since) this.#savingSince = null;
    }
    await removeUnnamed(dir, name, manifest);
  }

  /** Sealed segments searched from memory: not written to a file yet, or not mapped from it yet. */
  get inMemory(): number {
    let n = 0;
    for (const s of this.#sealed) if (!s.graph.viewed) n++;
    return n;
  }

  /** Sealed segments not written to a file yet (sealed after the last save began). */
  get unsaved(): number {
    let n = 0;
    for (const s of this.#sealed) if (s.saved === null) n++;
    return n;
  }

  /** Sealed segments mapped from their files whose pages this thread has not walked through yet (prefaultNext). */
  get cold(): number {
    let n = 0;
    for (const s of this.#sealed) if (s.graph.viewed && !s.prefaulted) n++;
    return n;
  }

  /** Sealed segments written to their files but still searched from memory, until viewSaved(). */
  get unviewed(): number {
    let n = 0;
    for (const s of this.#sealed) if (s.path !== null && !s.graph.viewed) n++;
    return n;
  }

  /**
   * Swaps every saved in-memory segment for a memory-mapped view of its file (usearch frees the
   * memory copy) and returns how many. Until then the segment is searched from memory on the
   * calling thread, and not shared with a worker (see shareWith). It holds the thread for a while
   * (usearch's view visits every node: ~35 ms for a 250k-row graph at 1M), and a worker told
   * about the new file then spends ~100 ms reading it through, so callers choose the moment.
   */
  viewSaved(): number {
    let n = 0;
    for (const s of this.#sealed) {
      if (s.path === null || s.graph.viewed) continue;
      s.graph.becomeView(s.path);
      n++;
    }
    return n;
  }

  /**
   * The saved index of `name`, or null when there is none or any part of it is missing, damaged
   * or not for this table and database (the caller then rebuilds).
   */
  static async open(dir: string, name: string, expect: { dimension: number; metric: Metric; tag: string }): Promise<{ ann: SegmentedAnn; seq: number } | null> {
    let m: Manifest;
    try {
      m = JSON.parse(await fsp.readFile(manifestPath(dir, name), 'utf8')) as Manifest;
    } catch {
      return null;
    }
    if (
      m?.format !== FORMAT ||
      m.tag !== expect.tag ||
      m.dimension !== expect.dimension ||
      m.metric !== expect.metric ||
      !METRICS.includes(m.metric) ||
      !Number.isSafeInteger(m.seq) ||
      !Array.isArray(m.segments)
    ) {
      return null;
    }
    const ann = new SegmentedAnn(expect.dimension, expect.metric);
    const graphOf = { dimension: expect.dimension, metric: expect.metric };
    try {
      // Every graph file is hashed before usearch touches any (one worker reads them all).
      const parts = [...m.segments, ...(m.delta ? [m.delta] : [])];
      const digests = await digestFiles(parts.map((p) => path.join(dir, p.file)));
      for (let i = 0; i < parts.length; i++) {
        const d = digests[i];
        if (d instanceof Error || d.bytes !== parts[i].digest.bytes || d.sha256 !== parts[i].digest.sha256) return null;
      }
      for (const s of m.segments) {
        const ids = await readIds(path.join(dir, s.file), s.size, s.idsDigest);
        const graph = ids && (await AnnIndex.open(path.join(dir, s.file), { ...graphOf, size: s.size, digest: s.digest }, 'view', { verified: true }));
        if (!ids || !graph) return null;
        ann.#sealed.push({
          graph,
          ids,
          dead: new Set(s.dead),
          saved: { file: s.file, digest: s.digest, idsDigest: s.idsDigest },
          path: path.join(dir, s.file),
          uid: nextUid++,
          retired: s.retired === true,
        });
      }
      if (m.delta) {
        const ids = await readIds(path.join(dir, m.delta.file), m.delta.size, m.delta.idsDigest);
        const graph = ids && (await AnnIndex.open(path.join(dir, m.delta.file), { ...graphOf, size: m.delta.size, digest: m.delta.digest }, 'load', { verified: true }));
        if (!ids || !graph) return null;
        ann.#delta = graph;
        ann.#deltaKeys = new Set(ids);
        ann.#savedDelta = m.delta;
        ann.#deltaShare = { uid: nextUid++, path: path.join(dir, m.delta.file), since: expect.metric === 'cosine' ? new DeltaSince(expect.dimension) : null };
      }
    } catch {
      return null;
    }
    return { ann, seq: m.seq };
  }

  /** Whether `name` has a saved index (a manifest) in `dir`, usable or not. */
  static hasSaved(dir: string, name: string): boolean {
    return fs.existsSync(manifestPath(dir, name));
  }

  /** Removes every saved file of `name` (its manifest first, so a crash leaves nothing half-named). */
  static removeFiles(dir: string, name: string): void {
    fs.rmSync(manifestPath(dir, name), { force: true });
    let entries: string[] = [];
    try {
      entries = fs.readdirSync(dir);
    } catch {
      return;
    }
    for (const f of entries) if (f.startsWith(`${name}-`) || f === `${name}.usearch`) fs.rmSync(path.join(dir, f), { force: true });
  }

  #markDead(rowIds: ArrayLike<number>): void {
    for (const s of this.#sealed) {
      const has = s.graph.containsMany(rowIds);
      for (let i = 0; i < has.length; i++) if (has[i]) s.dead.add(rowIds[i]);
    }
  }
}

/** A graph a search shares with the worker: a sealed segment, or the delta (walked there from its saved file). */
type SharedGraph = Pick<Segment, 'uid' | 'graph'> & { dead: Set<number> | null; isDelta?: true; since?: DeltaSince | null };

/** Searches queued on the worker past which this thread walks a lone graph itself. */
const MAX_WORKER_QUEUE = 8;

interface Found {
  id: number;
  d: number;
}

/** Row ids with their distances, nearest first, as a graph (or a scan by the same metric) answers. */
export interface ScoredKeys {
  keys: ArrayLike<number>;
  distances: ArrayLike<number>;
}

/** Adds a graph's answers, less the rows dead in it. */
function collect(into: Found[], r: ScoredKeys, dead: Set<number> | null): void {
  for (let j = 0; j < r.keys.length; j++) if (dead === null || !dead.has(r.keys[j])) into.push({ id: r.keys[j], d: r.distances[j] });
}

/** The `k` nearest distinct row ids. */
function best(found: Found[], k: number): number[] {
  found.sort((a, b) => a.d - b.d);
  const out: number[] = [];
  const seen = new Set<number>();
  for (const f of found) {
    if (seen.has(f.id)) continue;
    seen.add(f.id);
    out.push(f.id);
    if (out.length === k) break;
  }
  return out;
}

/** What each worker was last told per table, so unchanged tables are not re-sent. */
const workerSynced = new WeakMap<GraphWorker, Map<SegmentedAnn, string>>();

const manifestPath = (dir: string, name: string): string => path.join(dir, `${name}.json`);
const idsFile = (graphFile: string): string => `${graphFile}.ids`;

async function writeIds(graphFile: string, ids: Float64Array): Promise<FileDigest> {
  const bytes = Buffer.from(ids.buffer, ids.byteOffset, ids.byteLength);
  await writeFileDurably(idsFile(graphFile), bytes);
  return digestBytes(bytes);
}

async function readIds(graphFile: string, size: number, expect: FileDigest): Promise<Float64Array | null> {
  const bytes = await fsp.readFile(idsFile(graphFile)).catch(() => null);
  if (!bytes || bytes.byteLength !== size * 8) return null;
  const d = digestBytes(bytes);
  if (d.sha256 !== expect.sha256) return null;
  return new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

/** Deletes this table's files that the manifest does not name (older deltas, dropped segments, temp files). */
async function removeUnnamed(dir: string, name: string, m: Manifest): Promise<void> {
  const keep = new Set<string>();
  for (const f of [...m.segments.map((s) => s.file), ...(m.delta ? [m.delta.file] : [])]) {
    keep.add(f);
    keep.add(idsFile(f));
  }
  for (const f of await fsp.readdir(dir)) {
    // Another save's temp files are this process's own and still being written; a dead process's are litter.
    const ownTemp = f.endsWith('.tmp') && f.includes(`.${process.pid}.`);
    if (f.startsWith(`${name}-`) && !keep.has(f) && !ownTemp) await fsp.rm(path.join(dir, f), { force: true });
  }
}

