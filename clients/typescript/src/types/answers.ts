/**
 * The server's answers, as its OpenAPI document declares them (src/types/openapi.ts, generated:
 * `npm run generate -w @vss/client`). Only names are given here; every shape comes from the
 * document, so a change of an answer on the server changes these types at the next generation.
 */
import type { components, paths } from './openapi.ts';

type Responses<P extends keyof paths, M extends keyof paths[P]> = NonNullable<paths[P][M]> extends { responses: infer R } ? R : never;

/** The JSON answer of a route for a status (200 unless given). */
export type JsonAnswer<P extends keyof paths, M extends keyof paths[P], S extends keyof Responses<P, M> = 200 & keyof Responses<P, M>> =
  Responses<P, M>[S] extends { content: { 'application/json': infer A } } ? A : never;

/** The RFC 9457 problem body every error is answered with. */
export type Problem = components['schemas']['Problem'];

export type SearchAnswer = JsonAnswer<'/v1/search/', 'post'>;
export type SearchMatch = SearchAnswer['matches'][number];
export type Metadata = SearchMatch['metadata'];
export type WriteAnswer = JsonAnswer<'/v1/vector/write', 'post'>;
export type BatchAnswer = JsonAnswer<'/v1/vector/batch', 'post'>;
/** `upsert`: the batch answers summed, and how many requests carried them (the client's own). */
export type UpsertAnswer = BatchAnswer & { batches: number };
export type VectorAnswer = JsonAnswer<'/v1/vector/get', 'post'>;
export type VectorPage = JsonAnswer<'/v1/vector/list', 'post'>;
export type VectorRow = VectorPage['vectors'][number];
export type DeleteAnswer = JsonAnswer<'/v1/vector/delete', 'post'>;
export type CountAnswer = JsonAnswer<'/v1/vector/count', 'post'>;
export type TableAnswer = JsonAnswer<'/v1/keyspaces/table/create', 'post'>;
export type KeyspaceView = JsonAnswer<'/v1/keyspaces/create', 'post'>;
export type TableView = KeyspaceView['tables'][number];
export type UploadAnswer = JsonAnswer<'/v1/embed/', 'post'>;
export type UploadedFile = UploadAnswer['file'];
export type FileList = JsonAnswer<'/v1/files/', 'get'>;
export type FileSummary = FileList['details'][number];
export type FileDeleteAnswer = JsonAnswer<'/v1/files/{keyspace}/{table}/{*}', 'delete'>;
export type KeyView = JsonAnswer<'/v1/keys/revoke', 'post'>;
export type Permission = KeyView['permissions'];
/** A new or rotated key: the secret is in `key`, answered this once. */
export type NewKey = JsonAnswer<'/v1/keys/generate', 'post'>;
export type EmbeddingsAnswer = JsonAnswer<'/v1/embeddings', 'post'>;
export type HealthAnswer = JsonAnswer<'/v1/healthcheck/', 'get'>;
