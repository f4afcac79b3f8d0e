/**
 * The storage contract. Every backend (embedded SQLite + usearch, Cassandra) implements
 * `Storage`; the service layer sees nothing else. Storage never embeds text and never sees
 * HTTP types. Errors leave a backend as ServiceError codes (keyspace_not_found, already_exists,
 * dimension_mismatch, storage_unavailable...), never as driver errors.
 *
 * The shared contract suite in storage/contract.case.ts is the definition of "done" for a backend.
 */
import type { Metric } from '../index/metric.ts';

export type { Metric };

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Metadata = { [k: string]: Json };

export interface KeyspaceInfo {
  name: string;
  /** Owning user id; null for keyspaces made before accounts existed. */
  owner: string | null;
  replication: string;
  createdAt: string;
}

export interface TableInfo {
  keyspace: string;
  name: string;
  dimension: number;
  metric: Metric;
  /** The embedding model its text rows were embedded with, when known. */
  model: string | null;
  /** How the table's texts are tokenized for lexicalSearch (tables made before it existed: porter). */
  lexical: LexicalSettings;
  createdAt: string;
}

export type LexicalTokenizer = 'porter' | 'unicode61' | 'trigram';
export const LEXICAL_TOKENIZERS: readonly LexicalTokenizer[] = ['porter', 'unicode61', 'trigram'];
export interface LexicalSettings {
  tokenizer: LexicalTokenizer;
}
export const DEFAULT_LEXICAL: LexicalSettings = Object.freeze({ tokenizer: 'porter' });

export interface TableStats extends TableInfo {
  rowCount: number;
}

export interface VectorRow {
  key: string;
  /** Full precision; its length is the table's dimension. */
  vector: Float32Array;
  metadata: Metadata;
  text: string | null;
  /**
   * When the row expires, in ms since the epoch (null or absent: never). From that moment no read
   * returns it (get, scan, count, search of any kind), whether or not it has been removed yet.
   * Rewriting a row sets its expiry to what the new write says.
   */
  expiresAt?: number | null;
}

/** The longest TTL a write may ask for (ten years, in seconds): well inside Cassandra's 20-year cap. */
export const MAX_TTL_SECONDS = 10 * 365 * 24 * 3600;

/**
 * A metadata filter in the usual document-store dialect:
 * `{field: value}` (equality), `{field: {$eq|$ne|$gt|$gte|$lt|$lte: v}}`, `{field: {$in|$nin: [..]}}`,
 * `{field: {$exists: bool}}`, `{$and: [filter...]}`, `{$or: [filter...]}`. Fields may be dotted paths.
 * The service validates a filter before it reaches storage (index/filter.ts).
 */
export type Filter = { [k: string]: Json };

export interface SearchQuery {
  /** The query vector, of the table's dimension with finite values (the service checked both). */
  vector: Float32Array;
  metric: Metric;
  /** Stage 1: how many candidates to retrieve. */
  candidates: number;
  /** Stage 2: how many exact-rescored matches to return. */
  limit: number;
  /**
   * Stage 1's effort where the backend walks a graph: how many candidates each walk explores
   * (embedded: usearch's expansion, at least `candidates`; Cassandra: the ANN LIMIT, at least
   * `limit` and at most `candidates`). A backend without such a knob ignores it.
   */
  ef?: number;
  /**
   * Called at most once before the answer, where the backend's search leaves room for the
   * caller's other work: a hybrid search asks for its lexical list there (service/retrieve.ts).
   * The embedded backend calls it at once, or, where stage 2 reads the database (a table past the
   * vector memory budget), once the graph walks are done: the lexical top k then runs beside that
   * read instead of beside the walks, which it slows through memory. Cassandra calls it at once.
   */
  startBeside?: () => void;
  filter?: Filter;
  includeVector?: boolean;
}

export interface LexicalQuery {
  /**
   * The user's words, searched literally: tokenized with the table's tokenizer, any term may match
   * (OR), never query syntax. Distinct words count once (see lexical-terms.ts for the split).
   */
  text: string;
  /** How many best rows to return. */
  limit: number;
  /** The same filter dialect and semantics as SearchQuery.filter, applied before ranking. */
  filter?: Filter;
  includeVector?: boolean;
}

export interface StoredMatch extends MatchRow {
  key: string;
  score: number;
}

/** A match's row as a search answers it. */
export interface MatchRow {
  metadata: Metadata;
  text: string | null;
  vector?: Float32Array;
}

/**
 * A backend's own handle of a row (a row id, a key): what a listed row is read back by. Within
 * one process it never comes to name a row of another key: a row deleted after it was listed
 * reads back as absent (or, where refs are keys, as it is now if its key was written again).
 */
export type RowRef = number | string;

/** A search's answer without its rows: what fusing lists needs (see searchRefs). */
export interface ScoredRef {
  ref: RowRef;
  /** The row's key, where the backend has it at hand without a read (readMatches answers it in any case). */
  key?: string;
  score: number;
}

/** A listed row as readMatches reads it back. */
export interface ReadMatch extends MatchRow {
  key: string;
}

export interface MetadataRecord {
  keyspace: string;
  table: string;
  source_file: string;
  raw_value: string;
  source_type: string;
  processing_details: string;
  /** When the record expires, in ms since the epoch (null or absent: never); an expired record is not returned. */
  expires_at?: number | null;
}

export type Permission = 'All' | 'Write' | 'Read';

export interface User {
  id: string;
  name: string;
  email: string;
  plan: string;
  connections: { type: string; id: string }[];
  createdAt: string;
}

export interface ApiKeyRecord {
  id: string;
  userId: string;
  name: string;
  /** hex SHA-256 of the secret; the secret itself is never stored. */
  hash: string;
  permissions: Permission;
  /** Keyspace names, or ['*']. */
  resources: string[];
  createdAt: string;
  revokedAt: string | null;
}

export interface CatalogStore {
  /** Throws already_exists when the name is taken. */
  createKeyspace(ks: { name: string; owner: string | null; replication?: string }): Promise<KeyspaceInfo>;
  getKeyspace(name: string): Promise<KeyspaceInfo | null>;
  /** All keyspaces, or only those of one owner. */
  listKeyspaces(owner?: string): Promise<KeyspaceInfo[]>;
  /**
   * Creates a table; throws keyspace_not_found, and already_exists unless `ifNotExists`,
   * in which case the existing table is returned (its dimension may differ: the caller checks).
   */
  createTable(t: { keyspace: string; name: string; dimension: number; metric: Metric; model: string | null; lexical?: LexicalSettings }, opts?: { ifNotExists?: boolean }): Promise<TableInfo>;
  getTable(keyspace: string, name: string): Promise<TableInfo | null>;
  listTables(keyspace: string): Promise<TableStats[]>;
}

export interface VectorStore {
  /**
   * Upserts rows by key, all or nothing, durable when the promise resolves.
   * Throws table_not_found or dimension_mismatch.
   */
  upsertVectors(keyspace: string, table: string, rows: VectorRow[]): Promise<void>;
  getVector(keyspace: string, table: string, key: string): Promise<VectorRow | null>;
  /** Returns how many of the keys existed. */
  deleteVectors(keyspace: string, table: string, keys: string[]): Promise<number>;
  /** Returns how many rows were deleted. */
  deleteByFilter(keyspace: string, table: string, filter: Filter): Promise<number>;
  countVectors(keyspace: string, table: string, filter?: Filter): Promise<number>;
  /**
   * Pages through a table's rows in a stable order (for export): at most `limit` rows after
   * `cursor` (null or absent: from the start). The cursor is opaque; null when nothing follows.
   */
  scanVectors(keyspace: string, table: string, opts: { cursor?: string | null; limit: number }): Promise<{ rows: VectorRow[]; cursor: string | null }>;
  /** Two-stage search; best first. Throws table_not_found. */
  search(keyspace: string, table: string, q: SearchQuery): Promise<StoredMatch[]>;
  /**
   * Rows with text ranked by Okapi BM25 over the table's rows that have text, best first; `score`
   * is BM25 (higher is better), exactly as SQLite FTS5's bm25(): k1 = 1.2, b = 0.75, idf =
   * ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6, dl = the row's token count, avgdl = tokens / N.
   * Statistics (row count N, average length, document frequencies) are per table. Rows without
   * text (null or '') never match; a text with no tokens after tokenizing gives []. Throws table_not_found.
   */
  lexicalSearch(keyspace: string, table: string, q: LexicalQuery): Promise<StoredMatch[]>;
  /**
   * search and lexicalSearch answering each row's handle and score only (the same rows, order and
   * scores; the query's includeVector is ignored), with its key where the backend has it at hand:
   * a hybrid search fuses two long lists and keeps a few, whose rows it then reads with readMatches.
   * The same row has the same ref in both lists.
   */
  searchRefs(keyspace: string, table: string, q: SearchQuery): Promise<ScoredRef[]>;
  lexicalSearchRefs(keyspace: string, table: string, q: LexicalQuery): Promise<ScoredRef[]>;
  /**
   * The rows of refs listed by this table's searches, with their keys, as a search answers them,
   * read now: a row deleted or expired since it was listed (or a ref never listed) is absent from
   * the map, and the caller drops it. Throws table_not_found.
   */
  readMatches(keyspace: string, table: string, refs: readonly RowRef[], opts?: { includeVector?: boolean }): Promise<Map<RowRef, ReadMatch>>;
  /**
   * The table's default TTL in seconds (null: rows never expire unless a write says so). The
   * service applies it to writes that name no TTL; storage only keeps it. Throws table_not_found.
   */
  getDefaultTtl(keyspace: string, table: string): Promise<number | null>;
  /** Sets or (null) clears the table's default TTL; rows already written keep their expiry. */
  setDefaultTtl(keyspace: string, table: string, seconds: number | null): Promise<void>;
}

export interface SnapshotImage {
  /** The moment the image stands for (ISO 8601): every write acknowledged before it is in, none after. */
  takenAt: string;
  members: string[];
  tables: { keyspace: string; table: string; rows: number }[];
}

export interface MetadataStore {
  /** Upserts records keyed by (keyspace, table, source_file), all or nothing. */
  upsertMetadata(records: MetadataRecord[]): Promise<void>;
  /** The records of the given sources of one table, keyed by source_file. */
  getMetadata(keyspace: string, table: string, sourceFiles: string[]): Promise<Map<string, MetadataRecord>>;
  /**
   * Pages through a table's records by source_file (for export): at most `limit` after `cursor`
   * (null or absent: from the start). The cursor is opaque; null when nothing follows.
   */
  scanMetadata(keyspace: string, table: string, opts: { cursor?: string | null; limit: number }): Promise<{ records: MetadataRecord[]; cursor: string | null }>;
}

export interface Usage {
  /** Vectors stored in the keyspaces the user owns. */
  vectors: number;
  /** Bytes of uploaded files stored in the keyspaces the user owns. */
  fileBytes: number;
}

export type WebhookOutcome = 'applied' | 'duplicate';

export interface AccountStore {
  /** Throws already_exists on a taken e-mail. */
  createUser(u: { name: string; email: string; plan?: string }): Promise<User>;
  getUser(id: string): Promise<User | null>;
  getUserByEmail(email: string): Promise<User | null>;
  listUsers(): Promise<User[]>;
  createApiKey(k: Omit<ApiKeyRecord, 'id' | 'createdAt' | 'revokedAt'> & { id?: string }): Promise<ApiKeyRecord>;
  findApiKeyByHash(hash: string): Promise<ApiKeyRecord | null>;
  listApiKeys(userId?: string): Promise<ApiKeyRecord[]>;
  countApiKeys(): Promise<number>;
  getApiKey(id: string): Promise<ApiKeyRecord | null>;
  /** Marks the key revoked (idempotent); null when there is no such key. */
  revokeApiKey(id: string): Promise<ApiKeyRecord | null>;
  /** Adds `{type, id}` to the user's connections unless already there; throws user_not_found. */
  addConnection(userId: string, connection: { type: string; id: string }): Promise<User>;
  setUserPlan(userId: string, plan: string): Promise<void>;
  /**
   * Records a payment-provider event id and, in the same transaction, applies its plan change.
   * An id seen before changes nothing and answers 'duplicate'.
   */
  applyWebhookEvent(eventId: string, type: string, change: { userId: string; plan: string } | null): Promise<WebhookOutcome>;
  usageOf(userId: string): Promise<Usage>;
}

/** An uploaded file: its bytes are kept so it can be downloaded; its chunks are vectors `<name>#<i>`. */
export interface FileRecord {
  keyspace: string;
  table: string;
  /** The sanitised base name the client gave; unique per (keyspace, table). */
  name: string;
  size: number;
  sha256: string;
  /** Detected type: pdf, docx, html, json, csv, md, txt. */
  type: string;
  chunks: number;
  createdAt: string;
}

export interface FileStore {
  /**
   * Stores a file and its chunk vectors, replacing any earlier file of that name atomically:
   * its old chunks go, the new rows and metadata record arrive, in one step that a search never
   * sees half-done; on failure the old file stays whole. Throws table_not_found, dimension_mismatch.
   */
  replaceFile(file: FileRecord, content: Buffer, rows: VectorRow[], record: MetadataRecord): Promise<void>;
  getFile(keyspace: string, table: string, name: string): Promise<FileRecord | null>;
  readFileContent(keyspace: string, table: string, name: string): Promise<Buffer | null>;
  /** Files of the given keyspaces, by keyspace, table, name. */
  listFiles(keyspaces: string[]): Promise<FileRecord[]>;
  /** Removes the file, its chunk vectors and its metadata record; false when there was none. */
  deleteFile(keyspace: string, table: string, name: string): Promise<boolean>;
}

export interface Storage extends CatalogStore, VectorStore, MetadataStore, AccountStore, FileStore {
  readonly kind: 'embedded' | 'cassandra';
  /** Cheap liveness probe for the healthcheck. */
  ping(): Promise<boolean>;
  /**
   * Per-table ANN index progress, where the backend keeps its own index (embedded): with its graph
   * segments still searched from memory (`inMemorySegments`: not yet written to files and mapped,
   * so one thread walks them alone); and whether the table's in-memory posting lists answer its
   * lexical searches, where it keeps those.
   */
  indexStatus?(): { keyspace: string; table: string; rows: number; indexed: number; pending: number; inMemorySegments?: number; postingLists?: boolean }[];
  /**
   * Copies a consistent point-in-time image of everything stored into the empty directory `dir`
   * while writes go on (embedded: SQLite's online backup and the stored files it names; derived
   * files are left out, a start rebuilds them). Returns the files written, relative to `dir`, and
   * each table's rows at that moment. Backends whose engine has its own backups leave this out.
   */
  snapshot?(dir: string, onProgress?: (fraction: number) => void): Promise<SnapshotImage>;
  /** Flushes derived state (ANN indexes) and releases resources. */
  close(): Promise<void>;
}
