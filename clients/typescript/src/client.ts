import { splitBatches, SERVER_BATCH_LIMITS, type BatchLimits } from './batches.ts';
import { float32ToBase64 } from './float32.ts';
import { Transport, type TransportOptions } from './transport.ts';
import type * as A from './types/answers.ts';
import type * as R from './types/requests.ts';
import { toBlob, type UploadSource } from './upload-source.ts';

export interface VssClientOptions extends TransportOptions {
  /** Limits of one write request; the server's (1,000 items, 32 MiB) by default. Lower them, never raise them past the server's. */
  batch?: Partial<BatchLimits>;
  /** Largest stream `upload` reads into memory (the server's default upload limit, 64 MiB). */
  maxUploadBytes?: number;
}

export interface UploadOptions {
  /** The file's name on the server; a File's own name, else `upload`. */
  name?: string;
  keyspace?: string;
  table?: string;
  model_name?: string;
  chunk_size?: number;
  chunk_overlap?: number;
  signal?: AbortSignal;
}

type Where = { keyspace: string; table: string };

/**
 * A client of one vss server: `new VssClient({ url, apiKey })`. Every method sends one request
 * (retried on 429 and 503 as the server's Retry-After says) except `upsert` and `delete` by keys,
 * which split what exceeds one request's limits into several, sent one after another.
 */
export class VssClient {
  private readonly http: Transport;
  private readonly limits: BatchLimits;
  private readonly maxUploadBytes: number;

  constructor(options: VssClientOptions) {
    this.http = new Transport(options);
    this.limits = { ...SERVER_BATCH_LIMITS, ...options.batch };
    this.maxUploadBytes = options.maxUploadBytes ?? 64 * 1024 * 1024;
  }

  private post<T>(path: string, body: unknown, signal?: AbortSignal): Promise<T> {
    return this.http.json<T>('POST', path, { json: body }, signal);
  }

  private read<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.http.json<T>('GET', path, undefined, signal);
  }

  // Search

  /** `POST /v1/search/`: by `query` text, `vector` or `vector_base64`; hybrid fields pass through. */
  search(request: R.SearchRequest, signal?: AbortSignal): Promise<A.SearchAnswer> {
    return this.post('/v1/search/', request, signal);
  }

  // Vectors

  /**
   * Writes records (upsert by key) in as many `POST /v1/vector/batch` requests as the limits
   * need. Each request is all or nothing on the server; a failure stops at that batch, with the
   * batches before it written (the error says which batch in its message).
   */
  async upsert(request: R.UpsertRequest, signal?: AbortSignal): Promise<A.UpsertAnswer> {
    const { vectors, ...where } = request;
    const records = vectors.map(toServerRecord);
    const total: A.UpsertAnswer = { keyspace: where.keyspace, table: where.table, written: 0, keys: [], batches: 0 };
    for (const batch of splitBatches(records, this.limits)) {
      const answer = await this.post<A.BatchAnswer>('/v1/vector/batch', { ...where, vectors: batch }, signal);
      total.written += answer.written;
      total.keys.push(...answer.keys);
      total.batches++;
    }
    return total;
  }

  /** `POST /v1/vector/get`; a missing key is a VssError with code `vector_not_found`. */
  get(request: R.VectorGetRequest, signal?: AbortSignal): Promise<A.VectorAnswer> {
    return this.post('/v1/vector/get', request, signal);
  }

  /** Deletes by `keys` (in requests of at most 1,000 keys) or by `filter`; answers the total deleted. */
  async delete(request: Where & ({ keys: string[] } | { filter: R.Filter }), signal?: AbortSignal): Promise<A.DeleteAnswer> {
    if (!('keys' in request)) return this.post('/v1/vector/delete', request, signal);
    const { keys, ...where } = request;
    let deleted = 0;
    for (const batch of splitBatches(keys, this.limits)) {
      deleted += (await this.post<A.DeleteAnswer>('/v1/vector/delete', { ...where, keys: batch }, signal)).deleted;
    }
    return { ...where, deleted };
  }

  count(request: R.VectorCountRequest, signal?: AbortSignal): Promise<A.CountAnswer> {
    return this.post('/v1/vector/count', request, signal);
  }

  /** One page of rows in key order; pass the answer's `cursor` back for the next. */
  list(request: R.VectorListRequest, signal?: AbortSignal): Promise<A.VectorPage> {
    return this.post('/v1/vector/list', request, signal);
  }

  /** Every row of a table, page by page. */
  async *rows(request: Omit<R.VectorListRequest, 'cursor'>, signal?: AbortSignal): AsyncGenerator<A.VectorRow> {
    let cursor: string | undefined;
    do {
      const page = await this.list({ ...request, ...(cursor === undefined ? {} : { cursor }) }, signal);
      yield* page.vectors;
      cursor = page.cursor ?? undefined;
    } while (cursor !== undefined);
  }

  // Files

  /**
   * `POST /v1/embed/`: a file's text chunked, embedded and stored. The options go before the
   * file in the form, so the server checks them before it stores any of the file. For a path,
   * `fileFromPath` from `@vss/client/node`.
   */
  async upload(source: UploadSource, options: UploadOptions = {}): Promise<A.UploadAnswer> {
    const blob = await toBlob(source, this.maxUploadBytes);
    const form = new FormData();
    for (const field of ['keyspace', 'table', 'model_name', 'chunk_size', 'chunk_overlap'] as const) {
      if (options[field] !== undefined) form.append(field, String(options[field]));
    }
    const name = options.name ?? (blob instanceof File && blob.name ? blob.name : 'upload');
    form.append('file', blob, name);
    return this.http.json('POST', '/v1/embed/', { form }, options.signal);
  }

  files(where: Partial<Where> = {}, signal?: AbortSignal): Promise<A.FileList> {
    const query = new URLSearchParams(Object.entries(where).filter((e): e is [string, string] => e[1] !== undefined));
    return this.read(`/v1/files/${query.size ? `?${query}` : ''}`, signal);
  }

  /** The file's bytes exactly as uploaded. */
  async download(file: Where & { name: string }, signal?: AbortSignal): Promise<Uint8Array> {
    const res = await this.http.send('GET', filePath(file), undefined, signal);
    return new Uint8Array(await res.arrayBuffer());
  }

  deleteFile(file: Where & { name: string }, signal?: AbortSignal): Promise<A.FileDeleteAnswer> {
    return this.http.json('DELETE', filePath(file), undefined, signal);
  }

  // Keyspaces and tables

  /** A keyspace with a `vector` table of the default model; unnamed: a unique `ks_…` name. */
  createKeyspace(keyspace?: string, signal?: AbortSignal): Promise<A.KeyspaceView> {
    return this.post('/v1/keyspaces/create', keyspace === undefined ? {} : { keyspace }, signal);
  }

  async listKeyspaces(signal?: AbortSignal): Promise<A.KeyspaceView[]> {
    return (await this.read<{ keyspaces: A.KeyspaceView[] }>('/v1/keyspaces/list', signal)).keyspaces;
  }

  createTable(request: R.TableCreateRequest, signal?: AbortSignal): Promise<A.TableAnswer> {
    return this.post('/v1/keyspaces/table/create', request, signal);
  }

  // Keys

  /** A new key; its secret (`key`) is answered this once. */
  createKey(request: R.KeyGenerateRequest = {}, signal?: AbortSignal): Promise<A.NewKey> {
    return this.post('/v1/keys/generate', request, signal);
  }

  async listKeys(userId?: string, signal?: AbortSignal): Promise<A.KeyView[]> {
    const query = userId === undefined ? '' : `?${new URLSearchParams({ user_id: userId })}`;
    return (await this.read<{ keys: A.KeyView[] }>(`/v1/keys/retrieve${query}`, signal)).keys;
  }

  revokeKey(keyId: string, signal?: AbortSignal): Promise<A.KeyView> {
    return this.post('/v1/keys/revoke', { key_id: keyId }, signal);
  }

  /** A new secret with the same grant; the old one keeps working until revoked. */
  rotateKey(keyId: string, signal?: AbortSignal): Promise<A.NewKey> {
    return this.post('/v1/keys/rotate', { key_id: keyId }, signal);
  }

  // Embeddings and health

  /** `POST /v1/embeddings` (OpenAI's shape): one vector per input, in order. */
  async embed(input: string[], model?: string, signal?: AbortSignal): Promise<number[][]> {
    const answer = await this.post<A.EmbeddingsAnswer>('/v1/embeddings', { input, ...(model === undefined ? {} : { model }) }, signal);
    return [...answer.data].sort((a, b) => a.index - b.index).map((d) => d.embedding as number[]);
  }

  health(signal?: AbortSignal): Promise<A.HealthAnswer> {
    return this.read('/v1/healthcheck/', signal);
  }
}

function toServerRecord(record: R.UpsertRecord): Record<string, unknown> {
  if (!(record.vector instanceof Float32Array)) return record;
  const { vector, ...rest } = record;
  return { ...rest, vector_base64: float32ToBase64(vector) };
}

const filePath = (f: Where & { name: string }): string =>
  `/v1/files/${encodeURIComponent(f.keyspace)}/${encodeURIComponent(f.table)}/${encodeURIComponent(f.name)}`;
