/**
 * Portable export and import of a keyspace (or one table): tables with their settings, rows with
 * their vectors (base64 float32), texts and metadata, metadata records, and stored files with
 * their chunk rows. The format (docs/API.md, "Export format") is JSON lines, so that an export
 * streams from any backend and an import goes in batches that can be resumed. Only the storage
 * contract is used, so it moves a keyspace between embedded and Cassandra storage; vectors travel
 * with the rows, so an import calls no model.
 */
import { createHash } from 'node:crypto';
import { describeFields, ServiceError, type FieldError } from '../errors.ts';
import { encodeFloat32Base64, isStandardBase64 } from '../platform/float32-base64.ts';
import type { FileRecord, Metadata, MetadataRecord, TableInfo, VectorRow } from '../storage/api.ts';
import type { Deps } from './deps.ts';
import { createTable } from './keyspaces.ts';
import { writeMetadataBatch } from './metadata.ts';
import { forOwner } from './owner-lock.ts';
import { checkFileQuota, checkVectorQuota } from './quota.ts';
import { requireKeyspaceExists, requireTable } from './tables.ts';
import { clockOf, expiresAtIso } from './ttl.ts';
import { checkMetadata, checkText, isZero, vectorOf } from './validate.ts';
import { writeBatch } from './vectors.ts';

export const EXPORT_FORMAT = 'vss-export';
export const EXPORT_VERSION = 1;
/** Rows and records read from storage per page while exporting. */
const PAGE = 500;

export interface TableItem {
  type: 'table';
  table: string;
  dimension: number;
  metric: string;
  model: string | null;
  lexical: { tokenizer: string };
  /** The table's default time to live; null: rows do not expire unless written with one. */
  default_ttl_seconds?: number | null;
}

export interface RowItem {
  type: 'row';
  table: string;
  key: string;
  vector_base64: string;
  text: string | null;
  metadata: Metadata;
  /** When the row expires (ISO 8601); null or absent: never. */
  expires_at?: string | null;
}

export interface MetadataItem {
  type: 'metadata';
  table: string;
  source_file: string;
  raw_value: string;
  source_type: string;
  processing_details: string;
  /** When the record expires (ISO 8601); null or absent: never. */
  expires_at?: string | null;
}

export interface FileItem {
  type: 'file';
  table: string;
  name: string;
  file_type: string;
  size: number;
  sha256: string;
  created_at: string;
  content_base64: string;
  record: { raw_value: string; source_type: string; processing_details: string; expires_at?: string | null };
  chunks: Omit<RowItem, 'type' | 'table'>[];
}

export type ImportItem = TableItem | RowItem | MetadataItem | FileItem;

const expiry = (ms: number | null | undefined): { expires_at?: string } => (ms == null ? {} : { expires_at: expiresAtIso(ms)! });

const rowFields = (r: VectorRow) => ({ key: r.key, vector_base64: encodeFloat32Base64(r.vector), text: r.text, metadata: r.metadata, ...expiry(r.expiresAt) });

const tableItem = (t: TableInfo): TableItem => ({ type: 'table', table: t.name, dimension: t.dimension, metric: t.metric, model: t.model, lexical: { tokenizer: t.lexical.tokenizer } });

/**
 * The export of a keyspace (or one of its tables) as lines of JSON: a header, then per table its
 * settings, its files (each with its chunk rows and metadata record), its other rows, its other
 * metadata records; last an `end` line with the counts, so a cut-off export is told from a whole one.
 * Existence is checked before the first line; each row is read as it stands when its page is read.
 */
export async function exportKeyspace(deps: Deps, input: { keyspace: string; table?: string }): Promise<AsyncGenerator<string>> {
  const { storage } = deps;
  await requireKeyspaceExists(storage, input.keyspace);
  const tables = input.table !== undefined ? [await requireTable(storage, input.keyspace, input.table)] : await storage.listTables(input.keyspace);
  const line = (x: unknown): string => `${JSON.stringify(x)}\n`;
  return (async function* () {
    const counts = { tables: 0, rows: 0, metadata: 0, files: 0 };
    yield line({ format: EXPORT_FORMAT, version: EXPORT_VERSION, created_at: new Date().toISOString(), keyspace: input.keyspace, storage: storage.kind, tables: tables.map((t) => t.name) });
    const files = await storage.listFiles([input.keyspace]);
    for (const t of tables) {
      yield line({ ...tableItem(t), default_ttl_seconds: await storage.getDefaultTtl(t.keyspace, t.name) });
      counts.tables++;
      const own = files.filter((f) => f.table === t.name);
      const chunkKeys = new Set<string>();
      for (const f of own) {
        const item = await fileItem(deps, f);
        if (item === null) continue; // removed meanwhile
        for (const c of item.chunks) chunkKeys.add(c.key);
        yield line(item);
        counts.files++;
      }
      const names = new Set(own.map((f) => f.name));
      let cursor: string | null = null;
      do {
        const page: { rows: VectorRow[]; cursor: string | null } = await storage.scanVectors(t.keyspace, t.name, { cursor, limit: PAGE });
        const out = page.rows.filter((r) => !chunkKeys.has(r.key)).map((r) => line({ type: 'row', table: t.name, ...rowFields(r) }));
        counts.rows += out.length;
        if (out.length > 0) yield out.join('');
        cursor = page.cursor;
      } while (cursor !== null);
      cursor = null;
      do {
        const page: { records: MetadataRecord[]; cursor: string | null } = await storage.scanMetadata(t.keyspace, t.name, { cursor, limit: PAGE });
        const out = page.records.filter((r) => !names.has(r.source_file)).map((r) => line(metadataItem(r)));
        counts.metadata += out.length;
        if (out.length > 0) yield out.join('');
        cursor = page.cursor;
      } while (cursor !== null);
    }
    yield line({ type: 'end', ...counts });
  })();
}

const metadataItem = (r: MetadataRecord): MetadataItem => ({
  type: 'metadata',
  table: r.table,
  source_file: r.source_file,
  raw_value: r.raw_value,
  source_type: r.source_type,
  processing_details: r.processing_details,
  ...expiry(r.expires_at),
});

/**
 * An exported expiry as the TTL a write takes now: null (never) when absent, 0 when already
 * past (the item is left out: it would be invisible at once).
 */
function ttlNow(expiresAt: string | null | undefined, now: number): number | null {
  if (expiresAt === undefined || expiresAt === null) return null;
  const ms = Date.parse(expiresAt);
  return Number.isFinite(ms) ? Math.max(0, Math.ceil((ms - now) / 1000)) : null;
}

async function fileItem(deps: Deps, f: FileRecord): Promise<FileItem | null> {
  const content = await deps.storage.readFileContent(f.keyspace, f.table, f.name);
  if (content === null) return null;
  const record = (await deps.storage.getMetadata(f.keyspace, f.table, [f.name])).get(f.name);
  const chunks: FileItem['chunks'] = [];
  for (let i = 0; i < f.chunks; i++) {
    const row = await deps.storage.getVector(f.keyspace, f.table, `${f.name}#${i}`);
    if (row) chunks.push(rowFields(row));
  }
  return {
    type: 'file',
    table: f.table,
    name: f.name,
    file_type: f.type,
    size: f.size,
    sha256: f.sha256,
    created_at: f.createdAt,
    content_base64: content.toString('base64'),
    record: { raw_value: record?.raw_value ?? '', source_type: record?.source_type ?? '', processing_details: record?.processing_details ?? '', ...expiry(record?.expires_at) },
    chunks,
  };
}

/** What an import request added or replaced. */
export interface ImportCounts {
  tables: number;
  rows: number;
  metadata: number;
  files: number;
}

/**
 * Writes a batch of export items into `keyspace`, in order: a table line makes the table (or
 * checks that the existing one has the same dimension, metric and tokenizer), rows and metadata
 * records go through the same checks and quotas as their own routes, files are stored with their
 * chunk rows as they are. Every write is an upsert, so sending a batch again (a resumed import)
 * changes nothing. Consecutive rows (or records) of one table are written together, all or nothing.
 */
export async function importItems(deps: Deps, input: { keyspace: string; items: ImportItem[] }): Promise<{ keyspace: string; imported: ImportCounts }> {
  const { keyspace, items } = input;
  await requireKeyspaceExists(deps.storage, keyspace);
  const counts: ImportCounts = { tables: 0, rows: 0, metadata: 0, files: 0 };
  let i = 0;
  while (i < items.length) {
    const item = items[i];
    if (item.type === 'table') {
      await importTable(deps, keyspace, item, `/body/items/${i}`);
      counts.tables++;
      i++;
    } else if (item.type === 'file') {
      await importFile(deps, keyspace, item, `/body/items/${i}`);
      counts.files++;
      i++;
    } else {
      // A run of the same kind for the same table: one write.
      let j = i;
      while (j < items.length && j - i < deps.config.limits.batchItems && items[j].type === item.type && items[j].table === item.table) j++;
      const at = Array.from({ length: j - i }, (_, n) => i + n);
      if (item.type === 'row') {
        const now = clockOf(deps)();
        const rows = (items.slice(i, j) as RowItem[]).map((r, n) => ({ r, at: at[n], ttl: ttlNow(r.expires_at, now) })).filter((x) => x.ttl !== 0);
        if (rows.length > 0) {
          await relocated(
            rows.map((x) => x.at),
            '/body/vectors',
            () => writeBatch(deps, { keyspace, table: item.table, vectors: rows.map(({ r, ttl }) => ({ key: r.key, vector_base64: r.vector_base64, ...(r.text === null ? {} : { text: r.text }), metadata: r.metadata, ttl_seconds: ttl })) }),
          );
        }
        counts.rows += rows.length;
      } else {
        const now = clockOf(deps)();
        const kept = (items.slice(i, j) as MetadataItem[]).map(({ type: _type, expires_at, ...r }, n) => ({ at: at[n], record: { ...r, keyspace, ttl_seconds: ttlNow(expires_at, now) } })).filter((x) => x.record.ttl_seconds !== 0);
        const records = kept.map((x) => x.record);
        if (records.length > 0) await relocated(kept.map((x) => x.at), '/body/records', () => writeMetadataBatch(deps, records, '/body/records'));
        counts.metadata += records.length;
      }
      i = j;
    }
  }
  return { keyspace, imported: counts };
}

/** Runs a write whose errors name `/body/vectors/<n>` (or records): renamed to the items they came from. */
async function relocated<T>(at: number[], base: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (e) {
    if (!(e instanceof ServiceError) || !e.errors) throw e;
    const move = (p: string) => (p.startsWith(`${base}/`) ? p.replace(new RegExp(`^${base}/(\\d+)`), (_, n: string) => `/body/items/${at[Number(n)] ?? n}`) : p);
    const errors = e.errors.map((f) => ({ path: move(f.path), message: f.message }));
    throw new ServiceError(e.code, describeFields(errors, e.errorsTruncated), { errors, truncated: e.errorsTruncated, extra: e.extra, headers: e.headers, cause: e });
  }
}

async function importTable(deps: Deps, keyspace: string, item: TableItem, path: string): Promise<void> {
  const existing = await deps.storage.getTable(keyspace, item.table);
  if (existing === null) {
    // A model this server does not have is not kept: its texts could not be embedded here.
    const known = item.model !== null && deps.models.has(item.model);
    await createTable(deps, { keyspace, table: item.table, dimension: item.dimension, metric: item.metric, ...(known ? { model_name: item.model! } : {}), lexical: item.lexical, default_ttl_seconds: item.default_ttl_seconds ?? null });
    return;
  }
  const errors: FieldError[] = [];
  if (existing.dimension !== item.dimension) errors.push({ path: `${path}/dimension`, message: `is ${item.dimension}; the existing table holds ${existing.dimension}` });
  if (existing.metric !== item.metric) errors.push({ path: `${path}/metric`, message: `is ${item.metric}; the existing table uses ${existing.metric}` });
  if (existing.lexical.tokenizer !== item.lexical.tokenizer) errors.push({ path: `${path}/lexical/tokenizer`, message: `is ${item.lexical.tokenizer}; the existing table uses ${existing.lexical.tokenizer}` });
  if (errors.length > 0) throw new ServiceError('already_exists', `Table "${item.table}" exists with other settings: ${describeFields(errors)}`, { errors });
}

/** A stored file with its chunk rows and record, as exported: no extraction, no model. */
async function importFile(deps: Deps, keyspace: string, item: FileItem, path: string): Promise<void> {
  const { limits } = deps.config;
  const errors: FieldError[] = [];
  const content = isStandardBase64(item.content_base64) ? Buffer.from(item.content_base64, 'base64') : null;
  if (content === null) errors.push({ path: `${path}/content_base64`, message: 'must be standard base64' });
  else if (content.length !== item.size) errors.push({ path: `${path}/size`, message: `is ${item.size}; the content has ${content.length} bytes` });
  else if (createHash('sha256').update(content).digest('hex') !== item.sha256) errors.push({ path: `${path}/sha256`, message: 'does not match the content' });
  if (content !== null && content.length > limits.uploadBytes) errors.push({ path: `${path}/content_base64`, message: `holds ${content.length} bytes; the upload limit is ${limits.uploadBytes}` });
  const table = await requireTable(deps.storage, keyspace, item.table);
  const rows: VectorRow[] = item.chunks.map((c, n) => {
    const at = `${path}/chunks/${n}`;
    if (c.key !== `${item.name}#${n}`) errors.push({ path: `${at}/key`, message: `must be ${item.name}#${n}` });
    checkMetadata(c.metadata, `${at}/metadata`, errors, limits);
    checkText(c.text ?? undefined, `${at}/text`, errors, limits.textBytes);
    const { vector } = vectorOf(c, at, errors, limits);
    if (vector !== null && vector.length !== table.dimension) errors.push({ path: `${at}/vector_base64`, message: `has ${vector.length} dimensions; table "${table.name}" holds ${table.dimension}` });
    else if (vector !== null && table.metric === 'cosine' && isZero(vector)) errors.push({ path: `${at}/vector_base64`, message: 'a zero vector has no cosine similarity' });
    return { key: c.key, vector: vector ?? new Float32Array(0), metadata: c.metadata ?? {}, text: c.text ?? null, expiresAt: msOf(c.expires_at) };
  });
  if (errors.length > 0) throw new ServiceError('validation_failed', describeFields(errors), { errors });
  const file: FileRecord = { keyspace, table: item.table, name: item.name, size: item.size, sha256: item.sha256, type: item.file_type, chunks: rows.length, createdAt: item.created_at };
  const { expires_at: recordExpiry, ...recordFields } = item.record;
  const record: MetadataRecord = { keyspace, table: item.table, source_file: item.name, ...recordFields, ...(msOf(recordExpiry) !== null ? { expires_at: msOf(recordExpiry) } : {}) };
  const ks = await requireKeyspaceExists(deps.storage, keyspace);
  await forOwner(deps.storage, ks.owner, async () => {
    const current = await deps.storage.getFile(keyspace, item.table, item.name);
    await checkFileQuota(deps, ks.owner, item.size - (current?.size ?? 0));
    await checkVectorQuota(deps, ks.owner, rows.length - (current?.chunks ?? 0));
    await deps.storage.replaceFile(file, content!, rows, record);
  });
}

/** An exported ISO 8601 expiry as ms since the epoch (null: never, or not a date). */
function msOf(iso: string | null | undefined): number | null {
  const ms = iso == null ? NaN : Date.parse(iso);
  return Number.isFinite(ms) ? ms : null;
}
