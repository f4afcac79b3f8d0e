/**
 * The server's answers, written by hand from docs/API.md because the OpenAPI document describes
 * requests only. To be replaced by types generated into openapi.ts once the document describes
 * answers (issue #27, "The document describes every answer").
 */

export type Metadata = Record<string, unknown>;
export type Permission = 'Read' | 'Write' | 'All';

export interface SearchMatch {
  key: string;
  score: number;
  /** The vector's metadata, its source record's fields and `text` (docs/API.md, Search). */
  metadata: Metadata;
  vector?: number[];
  /** Hybrid searches: each list's own score, null where that list lacked the row. */
  scores?: { semantic: number | null; lexical: number | null };
}

export interface SearchAnswer {
  query: string | null;
  model_name: string;
  keyspace: string;
  table: string;
  metric: string;
  initial_top_k: number;
  final_top_k: number;
  include_vector: boolean;
  filter?: Record<string, unknown>;
  matches: SearchMatch[];
  mode?: 'semantic' | 'lexical' | 'hybrid';
  /** Why an answer degraded (a reranker that failed), when it did. */
  note?: string;
  [extra: string]: unknown;
}

export interface WriteAnswer {
  keyspace: string;
  table: string;
  key: string;
}

export interface BatchAnswer {
  keyspace: string;
  table: string;
  written: number;
  keys: string[];
}

/** `upsert`: the batch answers summed, and how many requests carried them. */
export interface UpsertAnswer extends BatchAnswer {
  batches: number;
}

export interface VectorRow {
  key: string;
  metadata: Metadata;
  text: string | null;
  vector?: number[];
}

export interface VectorAnswer extends VectorRow {
  keyspace: string;
  table: string;
}

export interface VectorPage {
  keyspace: string;
  table: string;
  vectors: VectorRow[];
  /** Give it back for the next page; null after the last. */
  cursor: string | null;
}

export interface DeleteAnswer {
  keyspace: string;
  table: string;
  deleted: number;
}

export interface CountAnswer {
  keyspace: string;
  table: string;
  count: number;
}

export interface TableView {
  table: string;
  dimension: number;
  metric: string;
  model: string | null;
  row_count: number;
  created_at: string;
}

export interface KeyspaceView {
  keyspace: string;
  owner: string | null;
  replication: unknown;
  created_at: string;
  tables: TableView[];
}

export interface FileSummary {
  keyspace: string;
  table: string;
  name: string;
  type: string;
  size: number;
  chunks: number;
  sha256: string;
  created_at: string;
}

export interface UploadedFile extends FileSummary {
  method: string;
  model: string;
  chunk_size: number;
  chunk_overlap: number;
  replaced: boolean;
  pages?: number;
  total_pages?: number;
  truncated?: boolean;
}

export interface UploadAnswer {
  files: string[];
  file: UploadedFile;
}

export interface FileList {
  files: string[];
  details: FileSummary[];
}

export interface FileDeleteAnswer {
  deleted: true;
  keyspace: string;
  table: string;
  name: string;
  chunks: number;
}

export interface KeyView {
  key_id: string;
  name: string;
  user_id: string;
  permissions: Permission;
  resources: string[];
  created_at: string;
  revoked_at: string | null;
}

/** A new or rotated key: the secret is in `key`, answered this once. */
export interface NewKey extends KeyView {
  key: string;
  rotated_from?: string;
}

export interface EmbeddingsAnswer {
  object: 'list';
  data: { object: 'embedding'; index: number; embedding: number[] | string }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface HealthAnswer {
  status: string;
  checks: { storage: string; model: string; [check: string]: string };
}
