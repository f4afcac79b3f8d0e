/**
 * Metadata records (a description of one source of vectors), keyed by (keyspace, table,
 * source_file): one partition per table, one row per source. Upserts are all-or-nothing through
 * a LOGGED batch when they fit in an estimated 24 KiB, otherwise concurrent idempotent writes (see vectors.ts).
 * A record's expiry is the engine's TTL (`USING TTL`, 0: never), read back with TTL(raw_value).
 */
import { type FieldError, invalid } from '../../errors.ts';
import type { MetadataRecord } from '../api.ts';
import { expiryOf, ttlSeconds } from './vectors.ts';
import { chunks, utf8Bytes } from './codec.ts';
import { type Ctx, sysTable } from './context.ts';
import { forEachLimit } from './session.ts';

const FIELDS = ['keyspace', 'table', 'source_file', 'raw_value', 'source_type', 'processing_details'] as const;
const LOGGED_BATCH_MAX_BYTES = 24 * 1024;

export async function upsertMetadata(ctx: Ctx, records: MetadataRecord[]): Promise<void> {
  const errors: FieldError[] = [];
  records.forEach((r, i) => {
    for (const f of FIELDS) if (typeof r?.[f] !== 'string') errors.push({ path: `/${i}/${f}`, message: 'must be a string' });
    for (const f of ['keyspace', 'table', 'source_file'] as const) {
      if (typeof r?.[f] === 'string' && r[f].length === 0) errors.push({ path: `/${i}/${f}`, message: 'must not be empty' });
    }
    if (r?.expires_at != null && !Number.isSafeInteger(r.expires_at)) errors.push({ path: `/${i}/expires_at`, message: 'must be an integer (ms since the epoch) or null' });
  });
  if (errors.length > 0) throw invalid(errors);
  const last = new Map<string, MetadataRecord>();
  for (const r of records) {
    const id = JSON.stringify([r.keyspace, r.table, r.source_file]);
    last.delete(id);
    last.set(id, r);
  }
  const cql = `INSERT INTO ${sysTable(ctx, 'metadata_records')} (keyspace_name, table_name, source_file, raw_value, source_type, processing_details) VALUES (?, ?, ?, ?, ?, ?) USING TTL ?`;
  const now = Date.now();
  const statements = [...last.values()].map((r) => ({
    query: cql,
    params: [r.keyspace, r.table, r.source_file, r.raw_value, r.source_type, r.processing_details, ttlSeconds(r.expires_at, now)],
    bytes: FIELDS.reduce((s, f) => s + utf8Bytes(r[f]), 128),
  }));
  const errCtx = { action: 'writing metadata records' };
  if (statements.length === 0) return;
  if (statements.length === 1) return ctx.session.write(cql, statements[0].params, errCtx);
  if (statements.reduce((s, x) => s + x.bytes, 0) <= LOGGED_BATCH_MAX_BYTES) return ctx.session.batch(statements, true, errCtx);
  await forEachLimit(statements, 8, (s) => ctx.session.write(s.query, s.params, errCtx));
}

const toRecord = (r: Record<string, unknown>): MetadataRecord => ({
  keyspace: r.keyspace_name as string,
  table: r.table_name as string,
  source_file: r.source_file as string,
  raw_value: (r.raw_value as string | null) ?? '',
  source_type: (r.source_type as string | null) ?? '',
  processing_details: (r.processing_details as string | null) ?? '',
  ...expiry(expiryOf(r.ttl)),
});
const expiry = (expiresAt: number | null): { expires_at?: number } => (expiresAt !== null ? { expires_at: expiresAt } : {});

/** One table's records in source_file order (the partition's clustering order); the cursor is the last source_file, base64url. */
export async function scanMetadata(ctx: Ctx, keyspace: string, table: string, opts: { cursor?: string | null; limit: number }): Promise<{ records: MetadataRecord[]; cursor: string | null }> {
  const limit = Math.max(1, Math.min(Math.floor(opts.limit) || 1, 10_000));
  let after: string | null = null;
  if (opts.cursor !== undefined && opts.cursor !== null) {
    after = Buffer.from(opts.cursor, 'base64url').toString('utf8');
    if (after === '' || Buffer.from(after, 'utf8').toString('base64url') !== opts.cursor) throw invalid([{ path: '/cursor', message: 'is not a cursor this table gave' }]);
  }
  const cols = 'keyspace_name, table_name, source_file, raw_value, source_type, processing_details, TTL(raw_value) AS ttl';
  const where = `keyspace_name = ? AND table_name = ?${after === null ? '' : ' AND source_file > ?'}`;
  const params: unknown[] = after === null ? [keyspace, table, limit + 1] : [keyspace, table, after, limit + 1];
  const rs = await ctx.session.execute('read', `SELECT ${cols} FROM ${sysTable(ctx, 'metadata_records')} WHERE ${where} LIMIT ?`, params, { fetchSize: limit + 1, ctx: { action: 'reading metadata records' } });
  const records = rs.rows.slice(0, limit).map((r) => toRecord(r as unknown as Record<string, unknown>));
  const more = rs.rows.length > limit;
  return { records, cursor: more ? Buffer.from(records[records.length - 1].source_file, 'utf8').toString('base64url') : null };
}

export async function getMetadata(ctx: Ctx, keyspace: string, table: string, sourceFiles: string[]): Promise<Map<string, MetadataRecord>> {
  const out = new Map<string, MetadataRecord>();
  const unique = [...new Set(sourceFiles)];
  if (unique.length === 0) return out;
  const cql = `SELECT keyspace_name, table_name, source_file, raw_value, source_type, processing_details, TTL(raw_value) AS ttl FROM ${sysTable(ctx, 'metadata_records')} WHERE keyspace_name = ? AND table_name = ? AND source_file IN ?`;
  for (const part of chunks(unique, 100)) {
    const rs = await ctx.session.execute('read', cql, [keyspace, table, part], { ctx: { action: 'reading metadata records' } });
    for (const r of rs.rows) out.set(r.source_file as string, toRecord(r as unknown as Record<string, unknown>));
  }
  return out;
}
