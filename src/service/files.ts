/**
 * Files: upload (extract, chunk, embed, store as vectors `<name>#<i>` plus a metadata record),
 * list, download, delete. See docs/API.md, "Files".
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { invalid, invalidFields, ServiceError, type CodedFieldError, type FieldError } from '../errors.ts';
import { validateChunkOptions } from '../ingest/chunk.ts';
import { ExtractPool } from '../ingest/extract/pool.ts';
import { prepareFile, sanitizeFileName, type PreparedFile } from '../ingest/ingest.ts';
import type { FileRecord, KeyspaceInfo, MetadataRecord, VectorRow } from '../storage/api.ts';
import { dimensionError, dimensionMismatch } from '../storage/vector-dimension.ts';
import { authorizeKeyspace, reachableKeyspaces, requirePermission, type Caller } from './caller.ts';
import type { Deps } from './deps.ts';
import { forOwner } from './owner-lock.ts';
import { checkFileQuota, checkTableQuota, checkVectorQuota } from './quota.ts';
import { requireKeyspaceExists } from './tables.ts';
import { checkModelName, validNames } from './validate.ts';

const NAME = /^[a-z][a-z0-9_]{0,47}$/;

/** The extraction processes of this server, with the configured limits (close it at shutdown). */
export function createExtractPool(deps: Deps): ExtractPool {
  const { workers, queue, memoryMb, timeoutMs, maxChars, maxPages, maxExpandedBytes } = deps.config.extract;
  return new ExtractPool({ workers, queue, memoryMb, timeoutMs, limits: { maxChars, maxPages, maxExpandedBytes } });
}

export interface UploadInput {
  /** The uploaded bytes, or a file holding them (the HTTP layer streams an upload to disk first). */
  source: { bytes: Buffer } | { path: string };
  /** The name the client gave; only its sanitised base name is used. */
  filename: string;
  keyspace?: string;
  table?: string;
  model_name?: string;
  chunk_size?: number;
  chunk_overlap?: number;
  /** Aborted when the client leaves: the upload stops between embedding batches and stores nothing. */
  signal?: AbortSignal;
}

function stopIfLeft(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ServiceError('request_aborted', 'The client closed the request before the upload finished; nothing was stored.');
}

export interface FileView {
  keyspace: string;
  table: string;
  name: string;
  type: string;
  size: number;
  chunks: number;
  sha256: string;
  created_at: string;
}

export interface UploadOutput {
  /** The file list (2.7): names of every file the caller can reach, in the order of `details` of GET /v1/files/. */
  files: string[];
  file: FileView & { method: string; model: string; chunk_size: number; chunk_overlap: number; replaced: boolean; pages?: number; total_pages?: number; truncated?: boolean };
}

const view = (f: FileRecord): FileView => ({
  keyspace: f.keyspace,
  table: f.table,
  name: f.name,
  type: f.type,
  size: f.size,
  chunks: f.chunks,
  sha256: f.sha256,
  created_at: f.createdAt,
});

/** Where a file is downloaded: the metadata record's raw_value. */
export const filePath = (keyspace: string, table: string, name: string): string =>
  `/v1/files/${keyspace}/${table}/${encodeURIComponent(name)}`;

function checkNames(keyspace: string, table: string, errors: FieldError[]): void {
  if (!NAME.test(keyspace)) errors.push({ path: '/body/keyspace', message: `must match ${NAME.source}` });
  if (!NAME.test(table)) errors.push({ path: '/body/table', message: `must match ${NAME.source}` });
}

/** The keyspace, if the caller may reach it; 403 outside the key's resources, 404 missing or another tenant's. */
async function reachKeyspace(deps: Deps, caller: Caller, keyspace: string): Promise<KeyspaceInfo> {
  const ks = await authorizeKeyspace(deps.storage, caller, keyspace);
  if (ks === null) throw new ServiceError('keyspace_not_found', `Keyspace "${keyspace}" does not exist.`);
  return ks;
}

/**
 * Checks what can be checked from the form fields alone: names, model, table dimension, chunk
 * options, and the caller's reach. The HTTP layer calls it as soon as the fields before the file
 * part are known, so a refused upload is refused before its bytes are written anywhere.
 */
export async function checkUpload(deps: Deps, caller: Caller, input: Omit<UploadInput, 'source' | 'filename'>, formErrors: FieldError[] = []) {
  const keyspace = input.keyspace ?? deps.config.defaultKeyspace;
  const tableName = input.table ?? deps.config.defaultTable;
  requirePermission(caller, 'Write');
  // What the fields alone say, all in one answer: the form's own errors, names, model, chunks.
  const errors: CodedFieldError[] = [...formErrors];
  checkNames(keyspace, tableName, errors);
  checkModelName(deps.models, input.model_name, '/body/model_name', errors);
  if (input.chunk_size !== undefined || input.chunk_overlap !== undefined) {
    try {
      validateChunkOptions({ chunkSize: input.chunk_size, overlap: input.chunk_overlap });
    } catch (e) {
      errors.push(...((e as ServiceError).errors ?? []));
    }
  }
  if (errors.length > 0) throw invalidFields(errors, validNames(deps.models));
  // The route cannot declare `config.keyspaces`: the keyspace is a multipart field, known only
  // once the body is being read. So the one keyspace gate (authorizeKeyspace) is called here,
  // before any extraction, embedding or storage work.
  const ks = await reachKeyspace(deps, caller, keyspace);
  const existing = await deps.storage.getTable(keyspace, tableName);
  const model = input.model_name ?? existing?.model ?? deps.config.defaultModel;
  const embedder = deps.models.get(model, '/body/model_name'); // unknown_model (400, lists the valid ones) or not_ready (503)
  const modelPath = input.model_name !== undefined ? '/body/model_name' : '/body/table';
  if (existing && existing.dimension !== embedder.dimension) {
    throw dimensionMismatch([dimensionError(modelPath, embedder.dimension, existing.dimension)], existing.dimension, embedder.dimension);
  }
  const { chunkSize, overlap } = validateChunkOptions({ chunkSize: input.chunk_size, overlap: input.chunk_overlap }, embedder.maxTokens - 2);
  if (existing === null) await checkTableQuota(deps, keyspace);
  return { keyspace, tableName, ks, model, embedder, modelPath, chunkSize, overlap };
}

type CheckedUpload = Awaited<ReturnType<typeof checkUpload>>;

/**
 * Uploads a file: extracts its text (type decided by content), chunks it in model tokens, embeds
 * the chunks in batches, and stores content, chunk vectors, metadata record and file entry in one
 * atomic replacement of any earlier file of that name. Nothing is stored when any step fails.
 */
export async function uploadFile(deps: Deps, caller: Caller, input: UploadInput, extractor: ExtractPool): Promise<UploadOutput> {
  const checked = await checkUpload(deps, caller, input);
  const { keyspace, tableName, ks, model, embedder, chunkSize, overlap } = checked;
  const name = sanitizeFileName(input.filename);

  const bytes = 'bytes' in input.source ? input.source.bytes : await readFile(input.source.path);
  if (bytes.length > deps.config.limits.uploadBytes) {
    throw new ServiceError('payload_too_large', `The file has ${bytes.length} bytes; the limit is ${deps.config.limits.uploadBytes}.`);
  }
  const old = await deps.storage.getFile(keyspace, tableName, name);
  await checkFileQuota(deps, ks.owner, bytes.length - (old?.size ?? 0));

  const prepared = await prepareFile(bytes, name, { tokenizer: embedder.model, chunkSize, overlap, extractor, signal: input.signal });
  await checkVectorQuota(deps, ks.owner, prepared.chunks.length - (old?.chunks ?? 0));

  // Bulk: every chunk at once to the bulk threads, which searches do not wait behind; a client
  // that leaves drops the batches not yet started.
  stopIfLeft(input.signal);
  const vectors = await embedder
    .embed(prepared.chunks.map((c) => c.text), { bulk: true, signal: input.signal })
    .catch((e: unknown) => {
      stopIfLeft(input.signal);
      throw e;
    });

  const stored = storedUpload(checked, name, bytes, prepared, vectors);
  await storeUpload(deps, checked, stored, input.signal);

  const { files } = await listFiles(deps, caller);
  return {
    files,
    file: {
      ...view(stored.file),
      method: prepared.method,
      model,
      chunk_size: chunkSize,
      chunk_overlap: overlap,
      replaced: old !== null,
      ...pageFields(prepared),
    },
  };
}

/** The pages read and the truncation flag, where the file has them: in the answer and in the metadata record's details. */
function pageFields(prepared: PreparedFile) {
  return {
    ...(prepared.pages !== undefined ? { pages: prepared.pages, total_pages: prepared.totalPages } : {}),
    ...(prepared.truncated ? { truncated: true } : {}),
  };
}

interface StoredUpload {
  file: FileRecord;
  content: Buffer;
  rows: VectorRow[];
  record: MetadataRecord;
}

/** What an upload stores: its content, one row a chunk (keyed `name#i`), the file entry, and its metadata record with the processing details. */
function storedUpload(checked: CheckedUpload, name: string, bytes: Buffer, prepared: PreparedFile, vectors: Float32Array[]): StoredUpload {
  const { keyspace, tableName, model, chunkSize, overlap } = checked;
  const rows: VectorRow[] = prepared.chunks.map((c, i) => ({
    key: `${name}#${i}`,
    vector: vectors[i],
    metadata: { source_file: name, source_type: prepared.type, chunk_index: i, text: c.text },
    text: c.text,
  }));
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const file: FileRecord = {
    keyspace,
    table: tableName,
    name,
    size: bytes.length,
    sha256,
    type: prepared.type,
    chunks: rows.length,
    createdAt: new Date().toISOString(),
  };
  const details = {
    model,
    chunk_size: chunkSize,
    chunk_overlap: overlap,
    chunks: rows.length,
    method: prepared.method,
    size: bytes.length,
    sha256,
    ...pageFields(prepared),
    uploaded_at: file.createdAt,
  };
  const record: MetadataRecord = {
    keyspace,
    table: tableName,
    source_file: name,
    raw_value: filePath(keyspace, tableName, name),
    source_type: prepared.type,
    processing_details: JSON.stringify(details),
  };
  return { file, content: bytes, rows, record };
}

/** Stores an upload in one replacement, with the owner's quotas checked again under the owner's lock and the table made if need be. */
async function storeUpload(deps: Deps, checked: CheckedUpload, { file, content, rows, record }: StoredUpload, signal: AbortSignal | undefined): Promise<void> {
  const { keyspace, tableName, ks, model, embedder, modelPath } = checked;
  await forOwner(deps.storage, ks.owner, async () => {
    stopIfLeft(signal);
    // Again, now that nothing else of this owner's is being written (see owner-lock.ts).
    const current = await deps.storage.getFile(keyspace, tableName, file.name);
    await checkFileQuota(deps, ks.owner, file.size - (current?.size ?? 0));
    await checkVectorQuota(deps, ks.owner, rows.length - (current?.chunks ?? 0));
    // Made only now, so that a failed upload leaves no empty table behind.
    const table = await deps.storage.createTable({ keyspace, name: tableName, dimension: embedder.dimension, metric: 'cosine', model }, { ifNotExists: true });
    if (table.dimension !== embedder.dimension) {
      throw dimensionMismatch([dimensionError(modelPath, embedder.dimension, table.dimension)], table.dimension, embedder.dimension);
    }
    await deps.storage.replaceFile(file, content, rows, record);
  });
}

/** `{files: [names], details: [...]}`, one entry per file (the same order in both), by keyspace, table, name. */
export async function listFiles(deps: Deps, caller: Caller, filter: { keyspace?: string; table?: string } = {}): Promise<{ files: string[]; details: FileView[] }> {
  let keyspaces: string[];
  if (filter.keyspace !== undefined) {
    await reachKeyspace(deps, caller, filter.keyspace);
    keyspaces = [filter.keyspace];
  } else {
    keyspaces = await reachableKeyspaces(deps.storage, caller);
  }
  let found = await deps.storage.listFiles(keyspaces);
  if (filter.table !== undefined) found = found.filter((f) => f.table === filter.table);
  return { files: found.map((f) => f.name), details: found.map(view) };
}

async function requireFile(deps: Deps, input: { keyspace: string; table: string; name: string }): Promise<FileRecord> {
  await requireKeyspaceExists(deps.storage, input.keyspace);
  const f = await deps.storage.getFile(input.keyspace, input.table, input.name);
  if (f === null) throw new ServiceError('file_not_found', `No file "${input.name}" in ${input.keyspace}.${input.table}.`);
  return f;
}

/** The stored bytes, exactly as uploaded. Keyspace reach is checked by the route's declaration. */
export async function downloadFile(deps: Deps, input: { keyspace: string; table: string; name: string }): Promise<{ file: FileView; content: Buffer }> {
  const f = await requireFile(deps, input);
  const content = await deps.storage.readFileContent(input.keyspace, input.table, input.name);
  if (content === null) throw new ServiceError('file_not_found', `No file "${input.name}" in ${input.keyspace}.${input.table}.`);
  return { file: view(f), content };
}

/** Removes the file, its chunk vectors and its metadata record. */
export async function deleteFile(deps: Deps, input: { keyspace: string; table: string; name: string }) {
  const f = await requireFile(deps, input);
  const deleted = await deps.storage.deleteFile(input.keyspace, input.table, input.name);
  if (!deleted) throw new ServiceError('file_not_found', `No file "${input.name}" in ${input.keyspace}.${input.table}.`);
  return { deleted: true, keyspace: f.keyspace, table: f.table, name: f.name, chunks: f.chunks };
}
