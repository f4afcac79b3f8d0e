import type { paths } from './openapi.ts';

/** The JSON body of a route, as the server's schema (and so the generated document) describes it. */
export type JsonBody<P extends keyof paths, M extends keyof paths[P]> = NonNullable<paths[P][M]> extends {
  requestBody?: { content: { 'application/json': infer B } };
}
  ? B
  : never;

/**
 * Hybrid retrieval (issue #25), being added to the server's search schema: written here so
 * clients can send them now. When the generated document carries them, this intersection
 * repeats what it says and can go.
 */
export interface HybridSearchFields {
  mode?: 'semantic' | 'lexical' | 'hybrid';
  fusion?: { method: 'rrf'; k?: number } | { method: 'relative'; alpha?: number };
  /** Maximal marginal relevance (Qdrant's naming): 0 = relevance only, 1 = diversity only. */
  mmr?: { diversity: number; candidates?: number };
  /** Re-order the candidates with the server's configured cross-encoder (VSS_RERANK_URL). */
  rerank?: boolean;
}

export type SearchRequest = Omit<JsonBody<'/v1/search/', 'post'>, 'matches'> & HybridSearchFields;
export type VectorWriteRequest = JsonBody<'/v1/vector/write', 'post'>;
export type VectorBatchRequest = JsonBody<'/v1/vector/batch', 'post'>;
export type VectorGetRequest = JsonBody<'/v1/vector/get', 'post'>;
export type VectorDeleteRequest = JsonBody<'/v1/vector/delete', 'post'>;
export type VectorListRequest = JsonBody<'/v1/vector/list', 'post'>;
export type VectorCountRequest = JsonBody<'/v1/vector/count', 'post'>;
export type TableCreateRequest = JsonBody<'/v1/keyspaces/table/create', 'post'>;
export type KeyGenerateRequest = JsonBody<'/v1/keys/generate', 'post'>;
export type EmbeddingsRequest = JsonBody<'/v1/embeddings', 'post'>;
export type Filter = NonNullable<SearchRequest['filter']>;

/** One record of a batch write, as the server takes it. */
type ServerRecord = NonNullable<Extract<VectorBatchRequest, { vectors?: unknown }>['vectors']>[number];

/** One record to upsert: the server's record, where `vector` may also be a Float32Array (sent as `vector_base64`). */
export type UpsertRecord = Omit<ServerRecord, 'vector'> & { vector?: number[] | Float32Array };

export interface UpsertRequest {
  keyspace: string;
  table: string;
  vectors: UpsertRecord[];
  model_name?: string;
}
