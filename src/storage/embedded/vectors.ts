/**
 * Vector rows: durable writes to SQLite, then the in-memory matrix and the ANN queue; searches
 * over the matrix (exact) or the ANN index (stage 1) with exact re-scoring from the database (stage 2).
 */
import { invalid, ServiceError, type FieldError } from '../../errors.ts';
import { exactSearchMatrix, rescore, type Scored } from '../../index/exact.ts';
import { filterToSql, validateFilter } from '../../index/filter.ts';
import type { GraphWorker } from '../../index/graph-worker.ts';
import type { Metric } from '../../index/metric.ts';
import type { Filter, LexicalQuery, Metadata, SearchQuery, StoredMatch, VectorRow } from '../api.ts';
import type { Catalog } from './catalog.ts';
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
/** Above this share of rows waiting for the index, scanning everything beats gathering them. */
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
  /** Searches some sealed graphs on a second thread (null: all on this one). */
  worker: GraphWorker | null;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v);

function checkFinite(v: Float32Array): boolean {
  for (let i = 0; i < v.length; i++) if (!Number.isFinite(v[i])) return false;
  return true;
}

export class Vectors {
  readonly #db: Db;
  readonly #catalog: Catalog;
  readonly #keeper: IndexKeeper;
  readonly #seq: SeqCounter;
  readonly #settings: VectorSettings;
  readonly #worker: GraphWorker | null;
  /** How many searches took each path (for monitoring and tests). */
  readonly searches = { exact: 0, ann: 0, filtered: 0 };

  constructor(db: Db, catalog: Catalog, keeper: IndexKeeper, seq: SeqCounter, settings: VectorSettings) {
    this.#db = db;
    this.#catalog = catalog;
    this.#keeper = keeper;
    this.#seq = seq;
    this.#settings = settings;
    this.#worker = settings.worker;
  }

  upsert(keyspace: string, table: string, rows: VectorRow[]): void {
    const t = this.#catalog.require(keyspace, table);
    const d = t.meta.dimension;
    const errors: FieldError[] = [];
    const vectors: Float32Array[] = [];
    rows.forEach((r, i) => {
      if (r.vector == null || typeof (r.vector as ArrayLike<number>).length !== 'number') {
        errors.push({ path: `/vectors/${i}/vector`, message: 'must be an array of numbers' });
        vectors.push(new Float32Array(d));
        return;
      }
      const v = r.vector instanceof Float32Array ? r.vector : Float32Array.from(r.vector as ArrayLike<number>);
      if (v.length !== d) {
        throw new ServiceError('dimension_mismatch', `vector ${i} has dimension ${v.length}; table ${keyspace}.${table} has dimension ${d}`, {
          extra: { expected: d, actual: v.length, index: i },
        });
      }
      vectors.push(v);
      if (typeof r.key !== 'string' || r.key === '') errors.push({ path: `/vectors/${i}/key`, message: 'must be a non-empty string' });
      if (!checkFinite(v)) errors.push({ path: `/vectors/${i}/vector`, message: 'must hold finite numbers only' });
      if (r.metadata != null && !isPlainObject(r.metadata)) errors.push({ path: `/vectors/${i}/metadata`, message: 'must be an object' });
      if (r.text != null && typeof r.text !== 'string') errors.push({ path: `/vectors/${i}/text`, message: 'must be a string or null' });
    });
    if (errors.length > 0) throw invalid(errors);
    if (rows.length === 0) return;

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
    this.#keeper.upserted(t, ids, seq);
  }

  /** Upserts rows inside the caller's transaction; returns their row ids. */
  #writeRows(tableId: number, rows: VectorRow[], vectors: Float32Array[], seq: number): number[] {
    // The conflict clause updates in place, so a key keeps its row id.
    const upsert = this.#db.stmt(
      `INSERT INTO vectors (table_id, key, metadata, seq) VALUES (?, ?, ?, ?)
       ON CONFLICT (table_id, key) DO UPDATE SET metadata = excluded.metadata, seq = excluded.seq
       RETURNING id`,
    );
    const payload = this.#db.stmt(
      `INSERT INTO vector_payloads (id, vector, text) VALUES (?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET vector = excluded.vector, text = excluded.text`,
    );
    const ids = rows.map((r, i) => {
      const { id } = upsert.get(tableId, r.key, JSON.stringify(r.metadata ?? {}), seq) as { id: number };
      payload.run(id, vectorToBlob(vectors[i]), r.text ?? null);
      return id;
    });
    indexTexts(this.#db, tableId, ids, rows.map((r) => r.text));
    return ids;
  }

  get(keyspace: string, table: string, key: string): VectorRow | null {
    const t = this.#catalog.require(keyspace, table);
    const r = this.#db
      .stmt('SELECT v.key, p.vector, v.metadata, p.text FROM vectors v JOIN vector_payloads p ON p.id = v.id WHERE v.table_id = ? AND v.key = ?')
      .get(t.meta.id, key) as
      | { key: string; vector: Buffer; metadata: string; text: string | null }
      | undefined;
    return r ? { key: r.key, vector: blobToVector(r.vector), metadata: JSON.parse(r.metadata) as Metadata, text: r.text } : null;
  }

  deleteKeys(keyspace: string, table: string, keys: string[]): number {
    const t = this.#catalog.require(keyspace, table);
    if (keys.length === 0) return 0;
    const del = this.#db.stmt('DELETE FROM vectors WHERE table_id = ? AND key = ? RETURNING id');
    return this.#delete(t, () => {
      const ids: number[] = [];
      for (const k of keys) {
        const r = del.get(t.meta.id, k) as { id: number } | undefined;
        if (r) ids.push(r.id);
      }
      return ids;
    });
  }

  deleteByFilter(keyspace: string, table: string, filter: Filter): number {
    const t = this.#catalog.require(keyspace, table);
    const { sql, params } = this.#filterSql(filter);
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
    const d = t.meta.dimension;
    const vectors = rows.map((r, i) => {
      const v = r.vector instanceof Float32Array ? r.vector : Float32Array.from(r.vector as ArrayLike<number>);
      if (v.length !== d) {
        throw new ServiceError('dimension_mismatch', `vector ${i} has dimension ${v.length}; table ${keyspace}.${table} has dimension ${d}`, {
          extra: { expected: d, actual: v.length, index: i },
        });
      }
      if (typeof r.key !== 'string' || r.key === '') throw invalid([{ path: `/vectors/${i}/key`, message: 'must be a non-empty string' }]);
      if (!checkFinite(v)) throw invalid([{ path: `/vectors/${i}/vector`, message: 'must hold finite numbers only' }]);
      return v;
    });
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
    t.matrix.setMany(ids, vectors);
    if (ids.length > 0) this.#keeper.upserted(t, ids, seq);
  }

  count(keyspace: string, table: string, filter?: Filter): number {
    const t = this.#catalog.require(keyspace, table);
    if (filter === undefined) return t.matrix.size;
    const { sql, params } = this.#filterSql(filter);
    return this.#db.raw.prepare(`SELECT count(*) FROM vectors WHERE table_id = ? AND ${sql}`).pluck().get(t.meta.id, ...params) as number;
  }

  async search(keyspace: string, table: string, q: SearchQuery): Promise<StoredMatch[]> {
    const t = this.#catalog.require(keyspace, table);
    const metric = q.metric ?? t.meta.metric;
    const limit = Math.min(Math.floor(q.limit), Math.floor(q.candidates));
    // Stage 1 may begin before the vector exists, from the draft (SegmentedAnn.searchAsync); the
    // table's state decides whether the graphs are used, and the vector is checked when it comes.
    let started: Promise<number[]> | null = null;
    if (q.vector instanceof Promise && q.draft !== undefined && this.#worker && limit >= 1 && q.filter === undefined && this.#annUsable(t, q.candidates, metric)) {
      const exact = q.vector.then((v) => this.#checkQuery(v, t, keyspace, table));
      started = t.ann!.searchAsync(exact, q.candidates, this.#worker, q.draft);
      started.catch(() => undefined); // the same failure reaches the caller through `query` below
    }
    const query = this.#checkQuery(await q.vector, t, keyspace, table);
    if (!(limit >= 1)) return [];
    this.#keeper.searched();

    // A stage 1 already started stands: the table's state was checked when it began.
    if (q.filter === undefined && !isZeroCosine(metric, query) && (started !== null || this.#annUsable(t, q.candidates, metric))) {
      // Stage 1: the graphs' candidates (walked on both threads, see SegmentedAnn.searchAsync),
      // plus the exact best of rows they do not hold yet.
      const ann = t.ann!;
      const fromAnn = started !== null ? await started : this.#worker ? await ann.searchAsync(query, q.candidates, this.#worker) : ann.search(query, q.candidates);
      const fromPending = t.pendingCount > 0 ? exactSearchMatrix(t.matrix, query, metric, limit, t.pendingIds()).map((s) => s.rowId) : [];
      this.searches.ann++;
      return this.#rescoreCandidates(t, query, fromAnn.concat(fromPending), metric, limit, q.includeVector === true);
    }
    let best: Scored[];
    if (q.filter !== undefined) {
      const { sql, params } = this.#filterSql(q.filter);
      const ids = this.#db.raw.prepare(`SELECT id FROM vectors WHERE table_id = ? AND ${sql}`).pluck().all(t.meta.id, ...params) as number[];
      best = exactSearchMatrix(t.matrix, query, metric, limit, ids);
      this.searches.filtered++;
    } else {
      best = exactSearchMatrix(t.matrix, query, metric, limit);
      this.searches.exact++;
    }
    return this.#hydrate(best, q.includeVector === true ? (id) => t.matrix.get(id) : null);
  }

  /** BM25 over the table's lexical index (lexical.ts), the filter applied in SQL before ranking. */
  lexicalSearch(keyspace: string, table: string, q: LexicalQuery): StoredMatch[] {
    const t = this.#catalog.require(keyspace, table);
    const filter = q.filter === undefined ? undefined : this.#filterSql(q.filter);
    const limit = Math.floor(q.limit);
    if (typeof q.text !== 'string' || !(limit >= 1)) return [];
    const best = searchLexical(this.#db, t.meta.id, t.meta.lexical.tokenizer, q.text, limit, filter);
    return this.#hydrate(best, q.includeVector === true ? (id) => t.matrix.get(id) : null);
  }

  #checkQuery(vector: Float32Array | ArrayLike<number>, t: TableState, keyspace: string, table: string): Float32Array {
    const d = t.meta.dimension;
    const query = vector instanceof Float32Array ? vector : Float32Array.from(vector);
    if (query.length !== d) {
      throw new ServiceError('dimension_mismatch', `the query vector has dimension ${query.length}; table ${keyspace}.${table} has dimension ${d}`, {
        extra: { expected: d, actual: query.length },
      });
    }
    if (!checkFinite(query)) throw invalid([{ path: '/vector', message: 'must hold finite numbers only' }]);
    return query;
  }

  /** Whether the graphs answer stage 1 for this table and query shape (the query itself aside). */
  #annUsable(t: TableState, candidates: number, metric: string): boolean {
    const n = t.matrix.size;
    return (
      this.#keeper.ready(t) &&
      metric === t.meta.metric &&
      n >= this.#settings.exactBelowRows &&
      candidates < n * ANN_MAX_CANDIDATE_SHARE &&
      t.pendingCount < n * ANN_MAX_PENDING_SHARE
    );
  }

  /**
   * Stage 2: exact float64 scores of the candidates from their full-precision rows (stale, deleted
   * or foreign ids drop out), then the answer fields of the best. From the database rather than
   * the vector file: its pages are memory-mapped and kept so (db-warmer.ts), while a vector-file
   * page idle for a minute may be back on disk, and 100 such reads took ~10 ms (docs/PERFORMANCE.md).
   * Only the payloads are read: whether an id is a live row of this table is the matrix's to say
   * (it changes in the same synchronous turn as each commit), and the join to `vectors` for its
   * table_id cost a third more (0.51 against 0.35 ms for 100 rows at 1M).
   */
  #rescoreCandidates(t: TableState, query: Float32Array, ids: number[], metric: Metric, limit: number, withVector: boolean): StoredMatch[] {
    if (ids.length === 0) return [];
    const rows = this.#db
      .stmt('SELECT id, vector FROM vector_payloads WHERE id IN (SELECT value FROM json_each(?))')
      .all(JSON.stringify(ids)) as { id: number; vector: Buffer }[];
    const bytes = t.meta.dimension * 4;
    const vectors = new Map<number, Buffer>();
    for (const r of rows) if (r.vector.byteLength === bytes && t.matrix.has(r.id)) vectors.set(r.id, r.vector);
    const vectorOf = (id: number): Float32Array | undefined => {
      const b = vectors.get(id);
      return b && blobView(b);
    };
    return this.#hydrate(rescore(query, ids, { get: vectorOf }, metric, limit), withVector ? vectorOf : null);
  }

  /** The answers for scored rows: key, metadata, text, and the vector when `vectorOf` is given. */
  #hydrate(best: Scored[], vectorOf: ((rowId: number) => Float32Array | undefined) | null): StoredMatch[] {
    if (best.length === 0) return [];
    const rows = this.#db
      .stmt('SELECT v.id, v.key, v.metadata, p.text FROM vectors v LEFT JOIN vector_payloads p ON p.id = v.id WHERE v.id IN (SELECT value FROM json_each(?))')
      .all(JSON.stringify(best.map((b) => b.rowId))) as { id: number; key: string; metadata: string; text: string | null }[];
    const byId = new Map(rows.map((r) => [r.id, r]));
    const out: StoredMatch[] = [];
    for (const b of best) {
      const r = byId.get(b.rowId);
      if (!r) continue;
      const m: StoredMatch = { key: r.key, score: b.score, metadata: JSON.parse(r.metadata) as Metadata, text: r.text };
      if (vectorOf) m.vector = vectorOf(b.rowId)!.slice();
      out.push(m);
    }
    return out;
  }

  #filterSql(filter: Filter): { sql: string; params: unknown[] } {
    const errors = validateFilter(filter, '/filter');
    if (errors.length > 0) throw invalid(errors);
    return filterToSql(filter);
  }

  /** Runs `remove` (which deletes rows and returns their ids) in a transaction with its bookkeeping. */
  #delete(t: TableState, remove: () => number[]): number {
    const seq = this.#seq.value + 1;
    const ids = this.#db.tx(() => {
      const ids = remove();
      if (ids.length > 0) {
        unindexRows(this.#db, t.meta.id, ids);
        this.#writeSeq(seq);
      }
      return ids;
    });
    if (ids.length === 0) return 0;
    this.#seq.value = seq;
    for (const id of ids) t.matrix.delete(id);
    this.#keeper.deleted(t, ids);
    return ids.length;
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
