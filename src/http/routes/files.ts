/**
 * Files: `POST /v1/embed/` (multipart upload), `GET /v1/files/` (list), and per file
 * `GET` (download) and `DELETE` on `/v1/files/:keyspace/:table/<name>`.
 *
 * The upload is streamed to `<dataDir>/uploads/<random id>.part` while busboy counts its bytes
 * (a file over `limits.uploadBytes` is a 413 the moment it passes the limit, or before anything
 * is read when Content-Length already says so), then handed to the service. The temp file is
 * removed on every path. This plugin parses multipart bodies only: any other body is a 415
 * before it is read.
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { diskFull, isDiskFull, ServiceError, type FieldError } from '../../errors.ts';
import type { Caller } from '../../service/caller.ts';
import type { Deps } from '../../service/deps.ts';
import { checkUpload, createExtractPool, deleteFile, downloadFile, listFiles, uploadFile, type UploadInput } from '../../service/files.ts';
import { UploadSlots } from '../../service/upload-slots.ts';
import { callerOf } from '../auth.ts';
import { answers } from '../openapi-responses.ts';
import { FileBytes, FileDeleted, FileList, Keyspace, TableName, UploadAnswer } from '../schemas/index.ts';

/** Room for the multipart framing and the small fields around the file, in a Content-Length check. */
const MULTIPART_OVERHEAD = 64 * 1024;
/** Temp uploads older than this at start-up were left by a crash. */
const STALE_UPLOAD_MS = 60 * 60 * 1000;
const FIELDS = ['keyspace', 'table', 'model_name', 'chunk_size', 'chunk_overlap'] as const;
type FieldName = (typeof FIELDS)[number];

const FileParams = Type.Object({ keyspace: Keyspace, table: TableName, '*': Type.String({ minLength: 1, maxLength: 2048, description: 'The file name' }) });
const FileListQuery = Type.Object(
  { keyspace: Type.Optional(Keyspace), table: Type.Optional(TableName) },
  { additionalProperties: false },
);

const tooLarge = (limit: number): ServiceError =>
  new ServiceError('payload_too_large', `The file is larger than the upload limit of ${limit} bytes.`, {
    extra: { limit },
    // The rest of the body is not read: the connection is closed after the answer.
    headers: { connection: 'close' },
  });

/** Errors of the multipart parser that are not ours become problems with the right status. */
function asProblem(e: unknown, limit: number): unknown {
  if (e instanceof ServiceError) return e;
  const err = e as { code?: string; statusCode?: number; message?: string };
  if (err?.code === 'FST_REQ_FILE_TOO_LARGE') return tooLarge(limit);
  // The temp file could not be written: the disk is full, not the body wrong.
  if (isDiskFull(e)) return diskFull(e);
  if (err?.statusCode === 413) return new ServiceError('payload_too_large', `The form has too many parts: ${err.message} (one file and at most ${FIELDS.length} fields).`);
  return new ServiceError('malformed_body', `The multipart body could not be read: ${err?.message ?? String(e)}`, { cause: e });
}

/** The form's fields as upload input; what cannot be read is pushed to `errors`. */
function parseFields(raw: Partial<Record<FieldName, string>>, errors: FieldError[]): Omit<UploadInput, 'source' | 'filename'> {
  const int = (k: 'chunk_size' | 'chunk_overlap'): number | undefined => {
    const v = raw[k];
    if (v === undefined) return undefined;
    if (!/^\s*\d{1,9}\s*$/.test(v)) {
      errors.push({ path: `/body/${k}`, message: 'must be a non-negative integer (tokens)' });
      return undefined;
    }
    return Number(v);
  };
  const out = {
    ...(raw.keyspace !== undefined ? { keyspace: raw.keyspace } : {}),
    ...(raw.table !== undefined ? { table: raw.table } : {}),
    ...(raw.model_name !== undefined ? { model_name: raw.model_name } : {}),
    chunk_size: int('chunk_size'),
    chunk_overlap: int('chunk_overlap'),
  };
  return out;
}

/** Streams one file part to `target`; 413 as soon as busboy counts past the limit. */
async function saveFilePart(file: Readable & { truncated?: boolean }, target: string, limit: number): Promise<void> {
  let over = false;
  file.once('limit', () => {
    over = true;
    file.destroy(tooLarge(limit));
  });
  try {
    await pipeline(file, createWriteStream(target, { flags: 'wx', mode: 0o600 }));
  } catch (e) {
    throw over ? tooLarge(limit) : e;
  }
  if (over || file.truncated) throw tooLarge(limit);
}

/**
 * Reads the form: fields (any order) and the one file part, which goes to `target`. When the
 * keyspace field came before the file, the fields are checked (keyspace reach, names, model,
 * chunk options) before a byte of the file is written; fields may also follow the file (as many
 * clients send them), and then they are checked once the form is read. Every bad field is named
 * in one answer.
 */
async function receiveForm(deps: Deps, caller: Caller, req: FastifyRequest, target: string): Promise<UploadInput> {
  const limit = deps.config.limits.uploadBytes;
  const raw: Partial<Record<FieldName, string>> = {};
  const errors: FieldError[] = [];
  let filename: string | null = null;
  try {
    for await (const part of req.parts()) {
      // A JSON pointer segment for the part's name (a part may have none).
      const at = part.fieldname ? `/body/${part.fieldname.replace(/~/g, '~0').replace(/\//g, '~1')}` : '/body';
      if (part.type === 'field') {
        const name = part.fieldname as FieldName;
        if (!part.fieldname) errors.push({ path: at, message: 'a form field has no name' });
        else if (name === ('file' as FieldName)) errors.push({ path: at, message: 'must be a file part (with a filename), not a text field' });
        else if (!FIELDS.includes(name)) errors.push({ path: at, message: `is not a known field (file, ${FIELDS.join(', ')})` });
        else if (raw[name] !== undefined) errors.push({ path: at, message: 'is given more than once' });
        else if (part.valueTruncated) errors.push({ path: at, message: 'must be at most 1024 bytes' });
        else raw[name] = String(part.value);
        continue;
      }
      if (part.fieldname !== 'file') {
        part.file.resume();
        errors.push({ path: at, message: 'is not a known field: send the file in the field `file`' });
        continue;
      }
      if (raw.keyspace !== undefined || errors.length > 0) await checkUpload(deps, caller, parseFields(raw, errors), errors);
      filename = part.filename ?? '';
      await saveFilePart(part.file, target, limit);
    }
  } catch (e) {
    throw asProblem(e, limit);
  }
  if (filename === null && !errors.some((e) => e.path === '/body/file')) errors.push({ path: '/body/file', message: 'is required: send the file in the multipart field `file`' });
  const fields = parseFields(raw, errors);
  if (errors.length > 0) await checkUpload(deps, caller, fields, errors);
  return { source: { path: target }, filename: filename!, ...fields };
}

const MIME: Record<string, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  html: 'text/html',
  json: 'application/json',
  csv: 'text/csv',
  md: 'text/markdown',
  txt: 'text/plain',
};

function contentType(type: string, content: Buffer): string {
  const mime = MIME[type] ?? 'application/octet-stream';
  if (!mime.startsWith('text/') && mime !== 'application/json') return mime;
  const utf16 = content.length >= 2 && ((content[0] === 0xff && content[1] === 0xfe) || (content[0] === 0xfe && content[1] === 0xff));
  return `${mime}; charset=${utf16 ? 'utf-16' : 'utf-8'}`;
}

/** `attachment` with an ASCII fallback name and the exact name in RFC 5987 form. */
function contentDisposition(name: string): string {
  const ascii = name.replace(/[^A-Za-z0-9._ ()+,=@-]/g, '_') || 'download';
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

async function sweepStaleUploads(dir: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.endsWith('.part')) continue;
    const p = path.join(dir, name);
    const s = await stat(p).catch(() => null);
    if (s && Date.now() - s.mtimeMs > STALE_UPLOAD_MS) await rm(p, { force: true });
  }
}

/**
 * POST /v1/embed/'s work: one of the caller's upload slots held throughout, the file part written
 * to a temporary file under `uploads` (removed whatever happens), then the service's upload, which
 * stops when the client leaves.
 */
async function receiveUpload(
  ctx: { deps: Deps; uploads: string; slots: UploadSlots; extractor: ReturnType<typeof createExtractPool> },
  req: FastifyRequest,
  reply: FastifyReply,
) {
  const { deps, uploads, slots, extractor } = ctx;
  const caller = callerOf(req);
  // Held until the work stops (a client that left frees it only once the upload has stopped).
  const release = slots.claim(caller.userId);
  try {
    // The response closing before it is written means the client left: stop the upload's work.
    const left = new AbortController();
    reply.raw.once('close', () => reply.raw.writableFinished || left.abort());
    if (!req.isMultipart()) {
      throw new ServiceError('unsupported_media_type', 'POST /v1/embed/ takes multipart/form-data with the file in the field `file`.');
    }
    const target = path.join(uploads, `${randomUUID()}.part`);
    try {
      const input = await receiveForm(deps, caller, req, target);
      return await uploadFile(deps, caller, { ...input, signal: left.signal }, extractor);
    } finally {
      await rm(target, { force: true });
    }
  } finally {
    release();
  }
}

export const fileRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  const limit = deps.config.limits.uploadBytes;
  const uploads = path.join(deps.config.dataDir, 'uploads');
  await mkdir(uploads, { recursive: true, mode: 0o700 });
  await sweepStaleUploads(uploads);
  const slots = new UploadSlots(deps.config.limits.uploadsPerUser);
  const extractor = createExtractPool(deps);
  app.addHook('onClose', async () => extractor.close());

  // In this plugin only multipart bodies are parsed: a JSON (or any other) body to /v1/embed/
  // is a 415 before it is read. @fastify/multipart is registered here, not on the root, so the
  // other routes keep taking JSON only.
  app.removeAllContentTypeParsers();
  await app.register(multipart, {
    limits: { fileSize: limit, files: 1, fields: 10, fieldSize: 1024, parts: 12 },
    throwFileSizeLimit: true,
  });

  app.post('/v1/embed/', {
    schema: {
      tags: ['files'],
      summary: 'Upload a file (multipart/form-data: `file`, optional keyspace, table, model_name, chunk_size, chunk_overlap): extract, chunk, embed, store',
      consumes: ['multipart/form-data'],
      response: answers({ 200: UploadAnswer }, [
        'dimension_mismatch',
        'unknown_model',
        'unprocessable_file',
        'quota_exceeded',
        'rate_limited',
        'request_aborted',
        'not_ready',
        'insufficient_storage',
      ]),
    },
    config: { permission: 'Write' },
    // Refused before a byte of the body is read when its declared length is already too much.
    onRequest: async (req) => {
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > limit + MULTIPART_OVERHEAD) throw tooLarge(limit);
    },
    handler: (req, reply) => receiveUpload({ deps, uploads, slots, extractor }, req, reply),
  });

  app.get('/v1/files/', {
    schema: { tags: ['files'], summary: "The caller's files: {files: [names], details: [...]}", querystring: FileListQuery, response: answers({ 200: FileList }) },
    config: { permission: 'Read', keyspaces: (r) => [(r.query as { keyspace?: string }).keyspace] },
    handler: (req) => listFiles(deps, callerOf(req), req.query),
  });

  const fileOf = (req: { params: { keyspace: string; table: string; '*': string } }) => ({ keyspace: req.params.keyspace, table: req.params.table, name: req.params['*'] });
  const paramKeyspace = (r: FastifyRequest) => [(r.params as { keyspace: string }).keyspace];

  app.get('/v1/files/:keyspace/:table/*', {
    schema: { tags: ['files'], summary: 'Download a file: the bytes as uploaded',
      params: FileParams,
      response: answers({ 200: { description: 'The bytes as uploaded, with the content type of the detected file type', content: { 'application/octet-stream': { schema: FileBytes } } } }, ['table_not_found', 'file_not_found', 'range_not_satisfiable']),
    },
    config: { permission: 'Read', keyspaces: paramKeyspace },
    handler: async (req, reply) => {
      const { file, content } = await downloadFile(deps, fileOf(req));
      return reply
        .header('content-type', contentType(file.type, content))
        .header('content-disposition', contentDisposition(file.name))
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        .header('etag', `"${file.sha256}"`)
        .send(content);
    },
  });

  app.delete('/v1/files/:keyspace/:table/*', {
    schema: { tags: ['files'], summary: 'Delete a file, its chunk vectors and its metadata record', params: FileParams, response: answers({ 200: FileDeleted }, ['table_not_found', 'file_not_found', 'insufficient_storage']) },
    config: { permission: 'Write', keyspaces: paramKeyspace },
    handler: (req) => deleteFile(deps, fileOf(req)),
  });
};
