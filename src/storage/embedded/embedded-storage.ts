/**
 * The embedded backend: one data directory, SQLite as the truth (`vss.db`); derived state beside
 * it: each table's float32 vectors (`vectors/<table id>.f32`, trusted at start only after a clean
 * close) and its segmented ANN index (`indexes/<table id>.json` and the graph files it names).
 * See docs/ARCHITECTURE.md, "Embedded storage".
 *
 * better-sqlite3 is synchronous, so every method runs to completion in one turn of the event
 * loop: a write's SQL commit and its in-memory effects are never interleaved with another call.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { Database } from './sqlite-driver.ts';
import { removeDeadTemps } from '../../platform/durable-file.ts';
import { DIR_MODE, FILE_MODE } from '../../platform/private-dir.ts';
import { ServiceError } from '../../errors.ts';
import type { AccountStore, CatalogStore, FileStore, MetadataStore, Storage, VectorStore } from '../api.ts';
import { Accounts } from './accounts.ts';
import { Catalog } from './catalog.ts';
import { Files } from './files.ts';
import { GraphWorker } from '../../index/graph-worker.ts';
import { FileMatrix, MemoryBudget } from '../../index/vector-file.ts';
import { IndexKeeper, type TableMeta } from './index-upkeep.ts';
import { MetadataRecords } from './metadata.ts';
import { migrate } from './schema.ts';
import { Db, mapStorageError } from './sql.ts';
import { scanVectors } from './scan.ts';
import { snapshotInto } from './snapshot.ts';
import { DbWarmer, type WarmPass } from './db-warmer.ts';
import { attachPostings, type PostingsSlice } from './lexical-postings.ts';
import { PRUNE_FROM_ROWS } from '../lexical/prune.ts';
import { ExpirySweep, type SweepSettings } from './expiry-sweep.ts';
import { YieldSignal } from '../../platform/yield-signal.ts';
import { SeqCounter, sqlIndexSource, Vectors } from './vectors.ts';

export interface EmbeddedOptions {
  dataDir: string;
  /** `gapPatienceMs`: how long copies and hashes of saved graphs wait for a gap in the searches (see yield-signal.ts). */
  index: { saveEveryChanges: number; saveEveryMs: number; exactBelowRows: number; segmentRows?: number; settleDeadlineMs?: number; tailRestMs?: number; keepUpRows?: number; ackRows?: number; gapPatienceMs?: number };
  /** Search half of a table's sealed graphs on a worker thread (default true). */
  searchWorker?: boolean;
  /**
   * Tables with at least this many rows with text keep posting lists in a thread of their own for
   * their unfiltered lexical searches (lexical-postings.ts); default 20,000: smaller ones are cheap
   * to rank from FTS5 on the event loop and start no thread.
   */
  postingListsFromRows?: number;
  /** How long, and after how many postings read, the posting lists' thread runs a search before the searches after it get a turn (tests set 0 and 0: a step each). */
  postingSlice?: PostingsSlice;
  /** Bytes of vectors that small tables may also keep in memory (scans then copy nothing); default 256 MiB. */
  vectorMemoryBytes?: number;
  /**
   * Bytes of the database file read through a memory map, its pages kept mapped by a warm-up
   * thread (db-warmer.ts); default 2 GiB, SQLite's cap. 0: plain reads and no warm-up.
   */
  mmapBytes?: number;
  defaultReplication?: string;
  /** The clock rows and metadata records expire by (ms since the epoch; default Date.now): tests pass one they control. */
  clock?: () => number;
  /** The background removal of expired rows (expiry-sweep.ts); default batches of 200 rows, a pass every second. */
  ttlSweep?: SweepSettings;
  /** Where upkeep problems (a damaged index being rebuilt, a failed save) are reported. */
  log?: (msg: string, err?: unknown) => void;
}

export interface IndexStatus {
  tableId: number;
  keyspace: string;
  table: string;
  rows: number;
  indexed: number;
  pending: number;
  savedSeq: number;
  /** Sealed ANN graph segments. */
  segments: number;
  /** Of those, still searched from memory: not yet written to their files or mapped from them (see index-upkeep.ts). */
  inMemorySegments: number;
  /** Sealed segments mapped from their files but not yet read through once on the main thread, so searches fault their pages in (see index-upkeep.ts). */
  coldSegments: number;
  /** Whether its posting lists are built in memory and answer its lexical searches (lexical-postings.ts). */
  postingLists: boolean;
}

export interface EmbeddedStorage extends Storage {
  readonly kind: 'embedded';
  /** Resolves when every table that uses an ANN index has indexed all of its rows. */
  whenIndexed(): Promise<void>;
  indexStatus(): IndexStatus[];
  /** Saves every ANN index with unsaved changes now. */
  flushIndexes(): Promise<void>;
  /** Reads the searched tables through the database's memory map now (see db-warmer.ts); joins a pass under way. */
  warmDatabase(): Promise<WarmPass>;
  /** Searches by stage-1 path since opening. */
  searchCounts(): { exact: number; ann: number; filtered: number };
  /** Runs a pass of the expiry sweep now (it also runs on its own timer); answers how many rows and records went. */
  sweepExpired(): Promise<number>;
  /** How long opening took, how many rows its tables hold, and how many were re-read from the database. */
  readonly startup: { ms: number; rows: number; refilled: number };
}

export async function openEmbeddedStorage(opts: EmbeddedOptions): Promise<EmbeddedStorage> {
  if (os.endianness() !== 'LE') throw new ServiceError('storage_unavailable', 'the embedded store stores float32 little-endian and needs a little-endian host');
  const started = performance.now();
  const dataDir = path.resolve(opts.dataDir);
  const mmapBytes = Math.max(0, Math.floor(opts.mmapBytes ?? 2 ** 31));
  const raw = openDatabase(dataDir, mmapBytes);
  const db = new Db(raw);
  const meta = (k: string): unknown => db.stmt('SELECT v FROM meta WHERE k = ?').pluck().get(k);
  const seq = new SeqCounter(Number(meta('seq')));
  const tag = String(meta('db_id'));

  // One query's graph walks on both cores (see graph-worker.ts); `searchWorker: false` keeps them here.
  const worker = opts.searchWorker === false ? null : new GraphWorker();
  // Moved by every search; background passes over files rest while it moves (see yield-signal.ts).
  const searches = new YieldSignal(opts.index.gapPatienceMs);
  const keeper = new IndexKeeper(
    { dir: path.join(dataDir, 'indexes'), segmentRows: 250_000, ...opts.index, tag, log: opts.log, worker, searches },
    sqlIndexSource(db, seq),
  );
  const { matrices, untrusted, matrixFor } = vectorFiles(path.join(dataDir, 'vectors'), seq, tag, new MemoryBudget(opts.vectorMemoryBytes ?? 256 * 2 ** 20));
  const catalog = new Catalog(db, keeper, opts.defaultReplication ?? 'local', matrixFor);
  const now = opts.clock ?? Date.now;
  const vectors = new Vectors(db, catalog, keeper, seq, { exactBelowRows: opts.index.exactBelowRows, worker, now });
  const accounts = new Accounts(db, now);
  const metadata = new MetadataRecords(db, now);
  const files = new Files(db, vectors, path.join(dataDir, 'files'), () => closing === null);

  let loaded: { rows: number; refilled: number };
  try {
    loaded = loadTables(catalog, vectors, keeper, untrusted, opts.log);
    files.sweep();
    for (const sub of ['indexes', 'vectors', 'files']) removeDeadTemps(path.join(dataDir, sub));
  } catch (e) {
    for (const m of matrices) m.close();
    void worker?.close();
    raw.close();
    throw mapStorageError(e);
  }
  keeper.start();
  const sweep = new ExpirySweep(opts.ttlSweep ?? { batchRows: 200, intervalMs: 1000 }, { unindex: (n) => vectors.unindexExpired(n), remove: [(n) => vectors.sweepExpired(n), (n) => metadata.sweepExpired(n)] }, opts.log);
  sweep.start();
  const warmer = new DbWarmer(path.join(dataDir, 'vss.db'), mmapBytes, searches, opts.log);
  // The large tables' posting lists, in a thread of their own (lexical-postings.ts).
  const postings = attachPostings(raw, dataDir, opts.postingListsFromRows ?? PRUNE_FROM_ROWS, opts.postingSlice);

  let closing: Promise<void> | null = null;
  /** Snapshots under way: close() lets them finish, since the database cannot close under a backup. */
  const snapshots = new Set<Promise<unknown>>();
  /**
   * Runs a method's body, refusing after close and mapping driver errors. A body that awaits file
   * I/O still runs its SQL part in one synchronous turn.
   */
  const run: Guard = async (fn) => {
    if (closing) throw new ServiceError('storage_unavailable', 'the embedded store is closed');
    try {
      return await fn();
    } catch (e) {
      throw mapStorageError(e);
    }
  };

  const storage: EmbeddedStorage = {
    kind: 'embedded',
    startup: { ms: Math.round(performance.now() - started), ...loaded },

    ...catalogStore(run, catalog, vectors),
    ...vectorStore(run, { db, catalog, keeper, vectors, now }),
    ...metadataStore(run, metadata),
    ...fileStore(run, files),
    ...accountStore(run, accounts),

    ping: async () => {
      if (closing) return false;
      try {
        return db.stmt('SELECT 1').pluck().get() === 1;
      } catch {
        return false;
      }
    },
    whenIndexed: () => keeper.whenIndexed(),
    indexStatus: () => keeper.status().map((t) => ({ ...t, postingLists: postings.built(t.tableId) })),
    warmDatabase: () => warmer.warm(),
    searchCounts: () => ({ ...vectors.searches }),
    flushIndexes: () => keeper.saveDirty(),
    sweepExpired: () => run(() => sweep.run()),
    snapshot: (dir, onProgress) =>
      run(() => {
        const taking = snapshotInto(raw, files, dataDir, dir, onProgress);
        snapshots.add(taking);
        return taking.finally(() => snapshots.delete(taking));
      }),
    close: () => {
      closing ??= closeStore({ snapshots, background: [sweep, warmer, keeper, postings], matrices, seq, tag, worker, raw });
      return closing;
    },
  };

  return storage;
}

/**
 * Closes the store: snapshots under way finish, the background work stops, the vector files are
 * saved last (with nothing left to write they match the database's final seq), then all is released.
 */
async function closeStore(parts: {
  snapshots: Set<Promise<unknown>>;
  background: { close(): Promise<void> }[];
  matrices: FileMatrix[];
  seq: SeqCounter;
  tag: string;
  worker: GraphWorker | null;
  raw: BetterSqlite3.Database;
}): Promise<void> {
  const { snapshots, background, matrices, seq, tag, worker, raw } = parts;
  await Promise.allSettled([...snapshots]);
  try {
    for (const b of background) await b.close();
    for (const m of matrices) await m.save(seq.value, tag);
  } finally {
    for (const m of matrices) m.close();
    await worker?.close();
    raw.close();
  }
}

/** A storage method's guard: runs its body unless the store is closed, mapping driver errors. */
type Guard = <T>(fn: () => T | Promise<T>) => Promise<T>;

/** Opens (creating if need be) the data directory's database, owner-only, and brings its schema up to date. */
function openDatabase(dataDir: string, mmapBytes: number): BetterSqlite3.Database {
  try {
    fs.mkdirSync(dataDir, { recursive: true, mode: DIR_MODE });
    // SQLite gives its -wal and -shm files the database file's mode: made 0600 here, they are too.
    const dbFile = path.join(dataDir, 'vss.db');
    fs.closeSync(fs.openSync(dbFile, 'a', FILE_MODE));
    const raw = new Database(dbFile);
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = FULL');
    raw.pragma('foreign_keys = ON');
    raw.pragma('busy_timeout = 5000');
    raw.pragma('cache_size = -65536');
    raw.pragma(`mmap_size = ${mmapBytes}`);
    migrate(raw);
    return raw;
  } catch (e) {
    throw new ServiceError('storage_unavailable', `cannot open the embedded database in ${dataDir}: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Each table's vector file in `dir`: `matrixFor` opens a table's saved file when it matches the
 * database (its seq and tag), else makes an empty one and marks the table untrusted, to be refilled
 * from the database. `matrices` holds every file opened, for close() to save and close.
 */
function vectorFiles(dir: string, seq: SeqCounter, tag: string, budget: MemoryBudget) {
  const matrices: FileMatrix[] = [];
  const untrusted = new Set<number>();
  const matrixFor = (meta: TableMeta, fresh: boolean): FileMatrix => {
    const file = path.join(dir, `${meta.id}.f32`);
    let m = fresh ? null : FileMatrix.openSaved(file, meta.dimension, { seq: seq.value, tag }, budget);
    if (m === null) {
      if (!fresh) untrusted.add(meta.id);
      fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE });
      m = FileMatrix.create(file, meta.dimension, budget);
    }
    matrices.push(m);
    return m;
  };
  return { matrices, untrusted, matrixFor };
}

/** Loads every table at start: refills the untrusted ones' vectors from the database, hands each to its index keeper. */
function loadTables(catalog: Catalog, vectors: Vectors, keeper: IndexKeeper, untrusted: Set<number>, log: EmbeddedOptions['log']): { rows: number; refilled: number } {
  const tables = catalog.loadTables();
  // Not closed cleanly since its last write (or never saved): the database is the truth.
  const refilled = vectors.fillMatrices(tables.filter((t) => untrusted.has(t.meta.id)), log);
  let rows = 0;
  for (const t of tables) {
    rows += t.matrix.size;
    keeper.restore(t);
  }
  vectors.loadExpiry();
  return { rows, refilled };
}

function catalogStore(run: Guard, catalog: Catalog, vectors: Vectors): CatalogStore {
  return {
    createKeyspace: (ks) => run(() => catalog.createKeyspace(ks)),
    getKeyspace: (name) => run(() => catalog.getKeyspace(name)),
    listKeyspaces: (owner) => run(() => catalog.listKeyspaces(owner)),
    createTable: (t, o) => run(() => catalog.createTable(t, o)),
    getTable: (ks, name) => run(() => catalog.getTable(ks, name)),
    // Counted by vectors.ts, which leaves out rows expired but not yet swept.
    listTables: (ks) => run(() => catalog.listTables(ks).map((t) => ({ ...t, rowCount: vectors.count(ks, t.name) }))),
  };
}

function vectorStore(run: Guard, parts: { db: Db; catalog: Catalog; keeper: IndexKeeper; vectors: Vectors; now: () => number }): VectorStore {
  const { db, catalog, keeper, vectors, now } = parts;
  return {
    // A bulk load waits for the graphs before it commits while its table's tail is long
    // (IndexKeeper.roomFor), and after, until they hold nearly all of it (caughtUp).
    upsertVectors: (ks, t, rows) =>
      run(async () => {
        await keeper.roomFor(catalog.require(ks, t));
        await run(() => vectors.upsert(ks, t, rows));
        await keeper.caughtUp(catalog.require(ks, t));
      }),
    getVector: (ks, t, key) => run(() => vectors.get(ks, t, key)),
    deleteVectors: (ks, t, keys) => run(() => vectors.deleteKeys(ks, t, keys)),
    deleteByFilter: (ks, t, filter) => run(() => vectors.deleteByFilter(ks, t, filter)),
    countVectors: (ks, t, filter) => run(() => vectors.count(ks, t, filter)),
    scanVectors: (ks, t, o) => run(() => scanVectors(db, catalog, ks, t, o, now())),
    search: (ks, t, q) => run(() => vectors.search(ks, t, q)),
    lexicalSearch: (ks, t, q) => run(() => vectors.lexicalSearch(ks, t, q)),
    searchRefs: (ks, t, q) => run(() => vectors.searchRefs(ks, t, q)),
    lexicalSearchRefs: (ks, t, q) => run(() => vectors.lexicalSearchRefs(ks, t, q)),
    readMatches: (ks, t, refs, o) => run(() => vectors.readMatches(ks, t, refs, o?.includeVector === true)),
    getDefaultTtl: (ks, t) => run(() => catalog.getDefaultTtl(ks, t)),
    setDefaultTtl: (ks, t, seconds) => run(() => catalog.setDefaultTtl(ks, t, seconds)),
  };
}

function metadataStore(run: Guard, metadata: MetadataRecords): MetadataStore {
  return {
    upsertMetadata: (records) => run(() => metadata.upsert(records)),
    getMetadata: (ks, t, files) => run(() => metadata.get(ks, t, files)),
    scanMetadata: (ks, t, o) => run(() => metadata.scan(ks, t, o)),
  };
}

function fileStore(run: Guard, files: Files): FileStore {
  return {
    replaceFile: (file, content, rows, record) => run(() => files.replace(file, content, rows, record)),
    getFile: (ks, t, name) => run(() => files.get(ks, t, name)),
    readFileContent: (ks, t, name) => run(() => files.readContent(ks, t, name)),
    listFiles: (keyspaces) => run(() => files.list(keyspaces)),
    deleteFile: (ks, t, name) => run(() => files.delete(ks, t, name)),
  };
}

function accountStore(run: Guard, accounts: Accounts): AccountStore {
  return {
    createUser: (u) => run(() => accounts.createUser(u)),
    getUser: (id) => run(() => accounts.getUser(id)),
    getUserByEmail: (email) => run(() => accounts.getUserByEmail(email)),
    listUsers: () => run(() => accounts.listUsers()),
    createApiKey: (k) => run(() => accounts.createApiKey(k)),
    findApiKeyByHash: (hash) => run(() => accounts.findApiKeyByHash(hash)),
    listApiKeys: (userId) => run(() => accounts.listApiKeys(userId)),
    countApiKeys: () => run(() => accounts.countApiKeys()),
    getApiKey: (id) => run(() => accounts.getApiKey(id)),
    revokeApiKey: (id) => run(() => accounts.revokeApiKey(id)),
    addConnection: (userId, c) => run(() => accounts.addConnection(userId, c)),
    setUserPlan: (userId, plan) => run(() => accounts.setUserPlan(userId, plan)),
    applyWebhookEvent: (id, type, change) => run(() => accounts.applyWebhookEvent(id, type, change)),
    usageOf: (userId) => run(() => accounts.usageOf(userId)),
  };
}
