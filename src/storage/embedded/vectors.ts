/**
 * Vector rows: durable writes to SQLite, then the in-memory matrix and the ANN queue; searches
 * over the matrix (exact) or the ANN index (stage 1) with exact re-scoring from the database (stage 2).
 */
import { invalid } from '../../errors.ts';
import { exactSearchMatrix, rescore, type Scored } from '../../index/exact.ts';
import { filterToSql, validateFilter } from '../../index/filter.ts';
import type { GraphWorker } from '../../index/graph-worker.ts';
import type { Metric } from '../../index/metric.ts';
import { LoopIdle } from '../../platform/loop-idle.ts';
import type { Filter, LexicalQuery, Metadata, ReadMatch, RowRef, ScoredRef, SearchQuery, StoredMatch, VectorRow } from '../api.ts';
import { requireQueryDimension, requireRowDimensions } from '../vector-dimension.ts';
import type { Catalog } from './catalog.ts';
import type { RowSet } from '../../index/row-bitmap.ts';
import { ExpiryTracker, LIVE, NONE_EXPIRED, expiryField } from './expiry.ts';
import type { IndexKeeper, IndexSource, TableState } from './index-upkeep.ts';
import { indexTexts, searchLexical, unindexRows } from './lexical.ts';
import { blobToVector, blobView, vectorToBlob, type Db } from './sql.ts';

/**
 * Stage 1 uses the ANN index only while the candidates asked for are a small share of the table:
 * beyond that a graph walk costs more than a SIMD scan of every row, which is also exact.
 * Measured at 384-d: 200k rows scan in ~20 ms; the graph returns 100 candidates in ~1.5 ms,
 * 1,000 in ~8 ms, 10,000 in ~70 ms.
 */
const ANN_MAX_CANDIDATE_SHARE = 1 / 64;
/**
 * Above this share of rows waiting for the index, scanning everything beats gathering them (a
 * table whose quantised tail holds them scans that instead, whatever their share).
 */
const ANN_MAX_PENDING_SHARE = 1 / 8;

/** The global change sequence, kept in memory and written in every vector transaction. */
export class SeqCounter {
  value: number;
  constructor(value: number) {
    this.value = value;
  }
}

export interface VectorSettings {
  exactBelowRows: number;
  /** The clock rows expire by (ms since the epoch); tests pass one they control. */
  now: () => number;
  /** Searches some sealed graphs on a second thread (null: all on this one). */
  worker: GraphWorker | null;
}

export class Vectors {
  readonly #db: Db;
  readonly #catalog: Catalog;
  readonly #keeper: IndexKeeper;
  readonly #seq: SeqCounter;
  readonly #settings: VectorSettings;
  readonly #worker: GraphWorker | null;
  readonly #now: () => number;
  /** Per table id: its rows with an expiry (expiry.ts); absent for tables that never had one. */
  readonly #expiry = new Map<number, ExpiryTracker>();
  /** How many searches took each path (for monitoring and tests). */
  readonly searches = { exact: 0, ann: 0, filtered: 0 };
  /** Whether a search came alone (the loop waited for it): then a lone graph is walked on this thread (SegmentedAnn.searchAsync). */
  readonly #loopIdle = new LoopIdle();
  /**
   * The id of the next new row (0: not read yet): above every id this process has seen. SQLite
   * would give a deleted highest id again; this way no id names two rows while the process runs,
   * so a search's refs (row ids) read back as absent once their row is gone (Storage.readMatches).
   */
  #nextRowId = 0;

  constructor(db: Db, catalog: Catalog, keeper: IndexKeeper, seq: SeqCounter, settings: VectorSettings) {
    this.#db = db;
    this.#catalog = catalog;
    this.#keeper = keeper;
    this.#seq = seq;
    this.#settings = settings;
    this.#worker = settings.worker;
    this.#now = settings.now;
  }

  /** Reads the expiring rows of every table into the trackers (start-up). */
  loadExpiry(): void {
    const tables = new Map(this.#catalog.all().map((t) => [t.meta.id, t]));
    const it = this.#db.raw
      .prepare('SELECT table_id, id, expires_at FROM vectors WHERE expires_at IS NOT NULL')
      .raw(true)
      .iterate() as IterableIterator<[number, number, number]>;
    for (const [tableId, id, at] of it) {
      const t = tables.get(tableId);
      if (t !== undefined) this.#tracker(t).set(id, at);
    }
  }

  #tracker(t: TableState): ExpiryTracker {
    let tr = this.#expiry.get(t.meta.id);
    if (tr === undefined) {
      this.#expiry.set(t.meta.id, (tr = new ExpiryTracker()));
      // So that index upkeep neither re-indexes expired rows nor counts their absence from the graphs as damage.
      t.hidden = tr;
    }
    return tr;
  }

  /** The table's rows that have expired but are still stored, as of now. */
  #expired(t: TableState): RowSet {
    return this.#expiry.get(t.meta.id)?.expired(this.#now()) ?? NONE_EXPIRED;
  }

  /** Records the expiries of rows just written (after their commit). */
  #trackWritten(t: TableState, ids: number[], rows: VectorRow[]): void {
    ids.forEach((id, i) => {
      const at = rows[i].expiresAt ?? null;
      if (at !== null || this.#expiry.has(t.meta.id)) this.#tracker(t).set(id, at);
    });
  }

  /** Rows as the service checked them (keys, finite values, metadata); the dimension is checked again here. */
  upsert(keyspace: string, table: string, rows: VectorRow[]): void {
    const t = this.#catalog.require(keyspace, table);
    requireRowDimensions(rows, t.meta.dimension);
    if (rows.length === 0) return;
    const vectors = rows.map((r) => r.vector);

    const seq = this.#seq.value + 1;
    const ids = this.#db.tx(() => {
      const out = this.#writeRows(t.meta.id, rows, vectors, seq);
      this.#writeSeq(seq);
      // Before the commit: a full disk then fails the write whole (see FileMatrix.reserve).
      t.matrix.reserve?.(new Set(out.filter((id) => !t.matrix.has(id))).size);
      return out;
    });
    this.#seq.value = seq;
    t.matrix.setMany(ids, vectors);
    this.#trackWritten(t, ids, rows);
    this.#keeper.upserted(t, ids, seq);
  }

  /** Upserts rows inside the caller's transaction; returns their row ids. */
  #writeRows(tableId: number, rows: VectorRow[], vectors: Float32Array[], seq: number): number[] {
    // The conflict clause updates in place, so a key keeps its row id; a new key takes #nextRowId.
    const upsert = this.#db.stmt(
      `INSERT INTO vectors (id, table_id, key, metadata, seq, expires_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (table_id, key) DO UPDATE SET metadata = excluded.metadata, seq = excluded.seq, expires_at = excluded.expires_at
       RETURNING id`,
    );
    const payload = this.#db.stmt(
      `INSERT INTO vector_payloads (id, vector, text) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET vector = excluded.vector, text = excluded.text`,
    );
    if (this.#nextRowId === 0) this.#nextRowId = ((this.#db.raw.prepare('SELECT max(id) FROM vectors').pluck().get() as number | null) ?? 0) + 1;
    const ids = rows.map((r, i) => {
      const { id } = upsert.get(this.#nextRowId, tableId, r.key, JSON.stringify(r.metadata ?? {}), seq, r.expiresAt ?? null) as { id: number };
      if (id === this.#nextRowId) this.#nextRowId++;
      payload.run(id, vectorToBlob(vectors[i]), r.text ?? null);
      return id;
    });
    indexTexts(this.#db, tableId, ids, rows.map((r) => r.text));
    return ids;
  }

  get(keyspace: string, table: string, key: string): VectorRow | null {
    const t = this.#catalog.require(keyspace, table);
    const r = this.#db
      .stmt(`SELECT v.key, p.vector, v.metadata, p.text, v.expires_at FROM vectors v JOIN vector_payloads p ON p.id = v.id WHERE v.table_id = ? AND v.key = ? AND ${LIVE}`)
      .get(t.meta.id, key, this.#now()) as
      | { key: string; vector: Buffer; metadata: string; text: string | null; expires_at: number | null }
      | undefined;
    return r ? { key: r.key, vector: blobToVector(r.vector), metadata: JSON.parse(r.metadata) as Metadata, text: r.text, ...expiryField(r.expires_at) } : null;
  }

  deleteKeys(keyspace: string, table: string, keys: string[]): number {
    const t = this.#catalog.require(keyspace, table);
    if (keys.length === 0) return 0;
    const del = this.#db.stmt('DELETE FROM vectors WHERE table_id = ? AND key = ? RETURNING id, expires_at');
    const now = this.#now();
    let live = 0;
    this.#delete(t, () => {
      const ids: number[] = [];
      for (const k of keys) {
        const r = del.get(t.meta.id, k) as { id: number; expires_at: number | null } | undefined;
        if (!r) continue;
        ids.push(r.id);
        // An expired row no longer exists for the caller, whether or not the sweep has been.
        if (r.expires_at === null || r.expires_at > now) live++;
      }
      return ids;
    });
    return live;
  }

  deleteByFilter(keyspace: string, table: string, filter: Filter): number {
    const t = this.#catalog.require(keyspace, table);
    const { sql, params } = this.#liveFilterSql(filter);
    const del = this.#db.raw.prepare(`DELETE FROM vectors WHERE table_id = ? AND ${sql} RETURNING id`).pluck();
    return this.#delete(t, () => del.all(t.meta.id, ...params) as number[]);
  }

  /**
   * The atomic step of a file replacement or removal (files.ts). In ONE transaction: `within`
   * runs first (it writes the file's other rows and returns the keys to remove), those keys go
   * (except the ones `rows` write again, which keep their row ids), and `rows` are upserted.
   * The matrix and the ANN queue change only after the commit, in the same synchronous turn,
   * so a search sees all of the old rows or all of the new ones, never a mix.
   */
  replaceRows(keyspace: string, table: string, rows: VectorRow[], within: () => string[]): void {
    const t = this.#catalog.require(keyspace, table);
    requireRowDimensions(rows, t.meta.dimension, '/rows');
    const vectors = rows.map((r) => r.vector);
    const seq = this.#seq.value + 1;
    const del = this.#db.stmt('DELETE FROM vectors WHERE table_id = ? AND key = ? RETURNING id');
    const { removed, ids } = this.#db.tx(() => {
      const keep = new Set(rows.map((r) => r.key));
      const removed: number[] = [];
      for (const k of within()) {
        if (keep.has(k)) continue;
        const r = del.get(t.meta.id, k) as { id: number } | undefined;
        if (r) removed.push(r.id);
      }
      unindexRows(this.#db, t.meta.id, removed);
      const ids = this.#writeRows(t.meta.id, rows, vectors, seq);
      this.#writeSeq(seq);
      t.matrix.reserve?.(new Set(ids.filter((id) => !t.matrix.has(id))).size);
      return { removed, ids };
    });
    this.#seq.value = seq;
    // Deletions first: SQLite may have given a removed row's id to a new row.
    for (const id of removed) t.matrix.delete(id);
    this.#keeper.deleted(t, removed);
    this.#expiry.get(t.meta.id)?.removed(removed);
    t.matrix.setMany(ids, vectors);
    this.#trackWritten(t, ids, rows);
    if (ids.length > 0) this.#keeper.upserted(t, ids, seq);
  }

  count(keyspace: string, table: string, filter?: Filter): number {
    const t = this.#catalog.require(keyspace, table);
    if (filter === undefined) return t.matrix.size - this.#expired(t).size;
    const { sql, params } = this.#liveFilterSql(filter);
    return this.#db.raw.prepare(`SELECT count(*) FROM vectors WHERE table_id = ? AND ${sql}`).pluck().get(t.meta.id, ...params) as number;
  }

  async search(keyspace: string, table: string, q: SearchQuery): Promise<StoredMatch[]> {
    const t = this.#catalog.require(keyspace, table);
    const found = await this.#searchRows(t, q);
    const vectorOf = q.includeVector === true ? (found.vectorOf ?? ((id: number) => t.matrix.get(id))) : null;
    return this.#hydrate(found.best, vectorOf);
  }

  /** search's rows as refs (their row ids): a hybrid search reads only the rows it keeps (readMatches). */
  async searchRefs(keyspace: string, table: string, q: SearchQuery): Promise<ScoredRef[]> {
    const t = this.#catalog.require(keyspace, table);
    const { best } = await this.#searchRows(t, q);
    return best.map((b) => ({ ref: b.rowId, score: b.score }));
  }

  /** Both stages of a search: the best rows' ids and exact scores, and where stage 2 read their vectors (when it did). */
  async #searchRows(t: TableState, q: SearchQuery): Promise<{ best: Scored[]; vectorOf?: (rowId: number) => Float32Array | undefined }> {
    const metric = q.metric ?? t.meta.metric;
    const limit = Math.min(Math.floor(q.limit), Math.floor(q.candidates));
    requireQueryDimension(q.vector, t.meta.dimension);
    const query = q.vector;
    if (!(limit >= 1)) return { best: [] };
    this.#keeper.searched();
    const startBeside = once(q.startBeside);

    if (q.filter === undefined && !isZeroCosine(metric, query) && this.#annUsable(t, q.candidates, metric)) {
      const found = await this.#annSearch(t, query, q.candidates, metric, limit, q.ef, startBeside);
      if (found !== null) return found;
    }
    startBeside();
    if (q.filter !== undefined) {
      const { sql, params } = this.#liveFilterSql(q.filter);
      const ids = this.#db.raw.prepare(`SELECT id FROM vectors WHERE table_id = ? AND ${sql}`).pluck().all(t.meta.id, ...params) as number[];
      this.searches.filtered++;
      return { best: exactSearchMatrix(t.matrix, query, metric, limit, ids) };
    }
    this.searches.exact++;
    return { best: exactSearchMatrix(t.matrix, query, metric, limit, undefined, this.#expired(t)) };
  }

  /**
   * Stage 1 from the graphs (walked on both threads, see SegmentedAnn.searchAsync) and the rows
   * they do not hold yet, then stage 2. Expired rows the graphs still hold (until the
   * sweep takes them out, unindexExpired) are dropped from the candidates, so the walk is asked
   * for that many more (up to the share where a scan wins); null when even that leaves fewer than
   * `limit` live rows: the caller then scans.
   */
  async #annSearch(t: TableState, query: Float32Array, candidates: number, metric: Metric, limit: number, ef: number | undefined, startBeside: () => void): Promise<{ best: Scored[]; vectorOf: (rowId: number) => Float32Array | undefined } | null> {
    const ann = t.ann;
    const expired = this.#expired(t);
    const inGraphs = this.#expiry.get(t.meta.id)?.indexedExpired ?? 0;
    const maxK = Math.max(candidates, Math.floor(t.matrix.size * ANN_MAX_CANDIDATE_SHARE));
    const alone = this.#loopIdle.waitedSinceLast();
    // Rows the graphs do not hold yet: in a quantised tail, its best by the graphs' own int8
    // distance compete with the graphs' answers for the k candidates (as Chroma ranks its
    // brute-force buffer with its graph's answers); else their exact best join the candidates.
    const tail = t.pendingCount === 0 ? null : t.tail;
    const walk = (k: number): Promise<number[]> | number[] => {
      const beside = tail?.searchScored(query, k);
      // No graph yet (a table's first bulk write, before the first indexing slice): the tail holds every row.
      if (ann === null) return beside === undefined ? [] : beside.keys;
      return this.#worker ? ann.searchAsync(query, k, this.#worker, ef, alone, beside) : ann.search(query, k, ef, beside);
    };
    const fromPending = t.pendingCount === 0 || tail !== null ? [] : exactSearchMatrix(t.matrix, query, metric, limit, t.pendingIds(), expired).map((s) => s.rowId);
    this.searches.ann++;
    // Enough to hold `candidates` live rows: surely with a few expired ones, by their share with
    // many (a mass expiry would otherwise make every walk the largest); a short page walks again.
    const live = t.matrix.size - expired.size;
    const share = (live + inGraphs) / Math.max(1, live);
    let k = inGraphs === 0 ? candidates : Math.min(candidates + inGraphs, Math.ceil(candidates * share * 1.25), maxK);
    // A table past the vector memory budget re-scores its candidates from the database: the
    // caller's work beside this search (a hybrid search's lexical top k) starts once the walks are
    // done, to run beside that read and not beside the walks, which it slows through memory.
    if (t.matrix.inMemory) startBeside();
    let fromAnn = await walk(k);
    startBeside();
    for (;;) {
      const found = this.#rescoreCandidates(t, query, fromAnn.concat(fromPending), metric, limit, expired);
      if (found.best.length >= limit || t.matrix.size - expired.size < limit) return found;
      if (k >= maxK) return null;
      k = maxK;
      fromAnn = await walk(k);
    }
  }

  /** BM25 over the table's lexical index (lexical.ts), the filter applied in SQL before ranking. */
  async lexicalSearch(keyspace: string, table: string, q: LexicalQuery): Promise<StoredMatch[]> {
    const t = this.#catalog.require(keyspace, table);
    return this.#hydrate(await this.#lexicalRows(t, q), q.includeVector === true ? (id) => t.matrix.get(id) : null);
  }

  async lexicalSearchRefs(keyspace: string, table: string, q: LexicalQuery): Promise<ScoredRef[]> {
    const t = this.#catalog.require(keyspace, table);
    return (await this.#lexicalRows(t, q)).map((r) => (r.key === undefined ? { ref: r.rowId, score: r.score } : { ref: r.rowId, key: r.key, score: r.score }));
  }

  async #lexicalRows(t: TableState, q: LexicalQuery): Promise<(Scored & { key?: string })[]> {
    // Without expired rows and a filter, FTS5 ranks alone; else the condition joins the rows.
    const filter = q.filter !== undefined ? this.#liveFilterSql(q.filter) : this.#expired(t).size > 0 ? { sql: LIVE, params: [this.#now()] } : undefined;
    const limit = Math.floor(q.limit);
    if (typeof q.text !== 'string' || !(limit >= 1)) return [];
    return searchLexical(this.#db, t.meta.id, t.meta.lexical.tokenizer, q.text, limit, filter);
  }

  /** The rows of refs (row ids) that are live rows of the table now, as a search answers them (see Storage.readMatches). */
  readMatches(keyspace: string, table: string, refs: readonly RowRef[], includeVector: boolean): Map<RowRef, ReadMatch> {
    const t = this.#catalog.require(keyspace, table);
    const out = new Map<RowRef, ReadMatch>();
    const ids = refs.filter((r) => typeof r === 'number');
    if (ids.length === 0) return out;
    // CROSS JOIN keeps SQLite's planner to the ids first (a lookup each), not the table's rows.
    const rows = this.#db
      .stmt(
        `SELECT v.id, v.key, v.metadata, p.text FROM json_each(?) ids CROSS JOIN vectors v ON v.id = ids.value
         LEFT JOIN vector_payloads p ON p.id = v.id WHERE v.table_id = ? AND ${LIVE}`,
      )
      .all(JSON.stringify(ids), t.meta.id, this.#now()) as { id: number; key: string; metadata: string; text: string | null }[];
    for (const r of rows) {
      const m: ReadMatch = { key: r.key, metadata: JSON.parse(r.metadata) as Metadata, text: r.text };
      if (includeVector) {
        const v = t.matrix.get(r.id);
        if (v === undefined) continue;
        m.vector = v.slice();
      }
      out.set(r.id, m);
    }
    return out;
  }

  /** Whether the graphs, with the quantised tail for rows they lack, answer stage 1 for this table and query shape (the query itself aside). */
  #annUsable(t: TableState, candidates: number, metric: string): boolean {
    const n = t.matrix.size;
    return (
      (this.#keeper.ready(t) || (t.tail !== null && t.restoring === null && t.pendingCount === n)) &&
      metric === t.meta.metric &&
      n >= this.#settings.exactBelowRows &&
      candidates < n * ANN_MAX_CANDIDATE_SHARE &&
      (t.pendingCount < n * ANN_MAX_PENDING_SHARE || t.tail !== null)
    );
  }

  /**
   * Stage 2: exact float64 scores of the candidates from their full-precision rows (stale, deleted
   * or foreign ids drop out), then the answer fields of the best. A table whose matrix keeps its
   * rows in memory (within VSS_VECTOR_MEMORY_MB) is re-scored from there: the same float32 values
   * the database holds, with no SQL (at 100k rows the payload read was ~30% of the main thread's
   * time at concurrency 16). Bigger tables read the database rather than the vector file: its
   * pages are memory-mapped and kept so (db-warmer.ts), while a vector-file page idle for a minute
   * may be back on disk, and 100 such reads took ~10 ms (the settled searches of
   * bench/vectors.bench.ts, a minute after a restart, before db-warmer.ts existed). Only the
   * payloads are read: whether an id is a live row of this table is the matrix's to say (it
   * changes in the same synchronous turn as each commit), and the join to `vectors` for its
   * table_id cost a third more (0.51 against 0.35 ms for 100 rows at 1M).
   */
  #rescoreCandidates(t: TableState, query: Float32Array, ids: number[], metric: Metric, limit: number, expired: RowSet): { best: Scored[]; vectorOf: (rowId: number) => Float32Array | undefined } {
    // Expired candidates go before the read: after a mass expiry they may be most of them.
    if (expired.size > 0) ids = ids.filter((id) => !expired.has(id));
    const matrix = t.matrix;
    if (matrix.residentView !== undefined && ids.length > 0 && matrix.residentView(ids[0]) !== null) {
      const fromMemory = (id: number): Float32Array | undefined => matrix.residentView!(id) ?? undefined;
      return { best: rescore(query, ids, { get: fromMemory }, metric, limit), vectorOf: fromMemory };
    }
    const vectors = new Map<number, Buffer>();
    const vectorOf = (id: number): Float32Array | undefined => {
      const b = vectors.get(id);
      return b && blobView(b);
    };
    if (ids.length === 0) return { best: [], vectorOf };
    const rows = this.#db
      .stmt('SELECT id, vector FROM vector_payloads WHERE id IN (SELECT value FROM json_each(?))')
      .all(JSON.stringify(ids)) as { id: number; vector: Buffer }[];
    const bytes = t.meta.dimension * 4;
    for (const r of rows) if (r.vector.byteLength === bytes && t.matrix.has(r.id)) vectors.set(r.id, r.vector);
    return { best: rescore(query, ids, { get: vectorOf }, metric, limit), vectorOf };
  }

  /**
   * The answers for scored rows: key, metadata, text, and the vector when `vectorOf` is given. A
   * row listed with its key is left out when its id now holds another key (deleted and the id reused).
   */
  #hydrate(best: (Scored & { key?: string })[], vectorOf: ((rowId: number) => Float32Array | undefined) | null): StoredMatch[] {
    if (best.length === 0) return [];
    const rows = this.#db
      .stmt('SELECT v.id, v.key, v.metadata, p.text FROM vectors v LEFT JOIN vector_payloads p ON p.id = v.id WHERE v.id IN (SELECT value FROM json_each(?))')
      .all(JSON.stringify(best.map((b) => b.rowId))) as { id: number; key: string; metadata: string; text: string | null }[];
    const byId = new Map(rows.map((r) => [r.id, r]));
    const out: StoredMatch[] = [];
    for (const b of best) {
      const r = byId.get(b.rowId);
      if (!r || (b.key !== undefined && b.key !== r.key)) continue;
      const m: StoredMatch = { key: r.key, score: b.score, metadata: JSON.parse(r.metadata) as Metadata, text: r.text };
      if (vectorOf) m.vector = vectorOf(b.rowId)!.slice();
      out.push(m);
    }
    return out;
  }

  /** The filter as SQL on `vectors`, and only rows not expired as of now. */
  #liveFilterSql(filter: Filter): { sql: string; params: unknown[] } {
    const errors = validateFilter(filter, '/filter');
    if (errors.length > 0) throw invalid(errors);
    const { sql, params } = filterToSql(filter);
    return { sql: `(${sql}) AND ${LIVE}`, params: [...params, this.#now()] };
  }

  /** Runs `remove` (which deletes rows and returns their ids) in a transaction with its bookkeeping; `synced` false: see Db.txUnsynced. */
  #delete(t: TableState, remove: () => number[], synced = true): number {
    const seq = this.#seq.value + 1;
    const ids = (synced ? this.#db.tx.bind(this.#db) : this.#db.txUnsynced.bind(this.#db))(() => {
      const ids = remove();
      if (ids.length > 0) {
        unindexRows(this.#db, t.meta.id, ids);
        this.#writeSeq(seq);
      }
      return ids;
    });
    if (ids.length === 0) return 0;
    this.#expiry.get(t.meta.id)?.removed(ids);
    this.#seq.value = seq;
    for (const id of ids) t.matrix.delete(id);
    this.#keeper.deleted(t, ids);
    return ids.length;
  }

  /**
   * Takes up to `max` rows that have expired as of now out of the ANN graphs, ahead of their
   * deletion; returns how many. The sweep does this first: it is ~20× cheaper per row than the
   * deletion, and while the graphs hold many expired rows every walk must go wider to find live
   * ones. Graphs left mostly dead are retired (index-upkeep.ts): their live rows are re-indexed
   * and scanned as pending rows meanwhile.
   */
  unindexExpired(max: number): number {
    const now = this.#now();
    let done = 0;
    for (const t of this.#catalog.all()) {
      if (done >= max) break;
      const batch = this.#expiry.get(t.meta.id)?.takeForGraphs(now, max - done) ?? [];
      if (batch.length === 0) continue;
      this.#keeper.deleted(t, batch);
      done += batch.length;
    }
    return done;
  }

  /**
   * Deletes up to `max` rows that have expired as of now (their index and lexical entries with
   * them, as any delete), from the tables in catalog order; returns how many went. The sweep
   * (expiry-sweep.ts) calls it batch by batch, yielding between batches.
   */
  sweepExpired(max: number): number {
    const now = this.#now();
    const del = this.#db.stmt('DELETE FROM vectors WHERE id = ? AND expires_at <= ? RETURNING id');
    let done = 0;
    for (const t of this.#catalog.all()) {
      if (done >= max) break;
      const tracker = this.#expiry.get(t.meta.id);
      const batch = tracker?.takeExpired(now, max - done) ?? [];
      if (batch.length === 0) continue;
      try {
        // Unsynced: a crash may undo the batch, and the rows, still expired, are swept again.
        done += this.#delete(t, () => batch.filter((id) => del.get(id, now) !== undefined), false);
      } catch (e) {
        tracker!.retake(batch);
        throw e;
      }
    }
    return done;
  }

  #writeSeq(seq: number): void {
    this.#db.stmt(`UPDATE meta SET v = ? WHERE k = 'seq'`).run(seq);
  }

  /**
   * Refills the matrices of the given tables from the database (a matrix file that could not be
   * trusted at start-up), in rowid order, in batches; returns the row count. A row whose BLOB does
   * not fit its table cannot be searched, so it is reported and left out rather than failing.
   */
  fillMatrices(tables: TableState[], log?: (msg: string) => void): number {
    if (tables.length === 0) return 0;
    const byId = new Map(tables.map((t) => [t.meta.id, { t, ids: [] as number[], vectors: [] as Float32Array[] }]));
    const flush = (b: { t: TableState; ids: number[]; vectors: Float32Array[] }) => {
      b.t.matrix.setMany(b.ids, b.vectors);
      b.ids = [];
      b.vectors = [];
    };
    let n = 0;
    const it = this.#db.raw
      .prepare('SELECT p.id, v.table_id, p.vector FROM vector_payloads p JOIN vectors v ON v.id = p.id')
      .raw(true)
      .iterate() as IterableIterator<[number, number, Buffer]>;
    for (const [id, tableId, blob] of it) {
      const b = byId.get(tableId);
      if (!b) continue;
      const t = b.t;
      if (blob.byteLength !== t.meta.dimension * 4) {
        log?.(`vector row ${id} of table ${t.meta.keyspace}.${t.meta.name} has ${blob.byteLength} bytes, expected ${t.meta.dimension * 4}; skipped`);
        continue;
      }
      b.ids.push(id);
      b.vectors.push(blobToVector(blob));
      if (b.ids.length === 4096) flush(b);
      n++;
    }
    for (const b of byId.values()) if (b.ids.length > 0) flush(b);
    return n;
  }
}

/** The SQL side of index upkeep. */
export function sqlIndexSource(db: Db, seq: SeqCounter): IndexSource {
  return {
    rowsSince: (tableId, after) =>
      db.stmt('SELECT id, seq FROM vectors WHERE table_id = ? AND seq > ? ORDER BY seq').iterate(tableId, after) as IterableIterator<{ id: number; seq: number }>,
    currentSeq: () => seq.value,
  };
}

/** A cosine query without a direction: the graphs cannot rank it (the exact scan answers). */
const isZeroCosine = (metric: string, query: Float32Array): boolean => metric === 'cosine' && query.every((x) => x === 0);

/** `f` called the first time only (nothing when absent). */
function once(f: (() => void) | undefined): () => void {
  return () => {
    const g = f;
    f = undefined;
    g?.();
  };
}
