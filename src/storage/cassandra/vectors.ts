/**
 * Vector rows: upsert, get, delete, delete by filter, count.
 *
 * Writes are prepared, idempotent upserts at the configured consistency. Every row is validated
 * before anything is written (dimension, finite components, no zero vector under cosine: Cassandra
 * answers those with a generic server error), and duplicate keys in one call keep the last row.
 * Every write carries the rows' lexical postings (lexical.ts), so it first reads the rows' current
 * text. Atomicity: a call whose rows and postings fit in one LOGGED batch (estimated <= 24 KiB:
 * Cassandra's own count of a batch runs ~1.3x our estimate and its default
 * batch_size_fail_threshold is 50 KiB; that is about 14 rows of 384 dimensions without text) is
 * all-or-nothing through the batchlog. Larger calls run as concurrent per-row batches (32 in flight,
 * each retried on timeouts), each row with its postings: invalid input still writes nothing, but an
 * outage mid-call can leave part of the rows written; the call then fails with storage_unavailable
 * and repeating it is safe.
 *
 * Every row also carries its metadata as SAI terms (filter-terms.ts). countVectors reads the row
 * counters (counts.ts) without a filter, and lets Cassandra count a filter its index serves; other
 * filters, and deleteByFilter, page through every row's metadata (O(rows)). Writes and deletes add
 * the rows they create, remove or move between expiry buckets to the counters; an expiring row
 * records its bucket in "expiry_bucket" (expiry-counts.ts).
 *
 * deleteByFilter takes effect as of its scan: the scan reads each matching row's write time, and the
 * row is deleted `USING TIMESTAMP` that time, which removes the version the scan saw (and older
 * ones) but not a rewrite made after it (a later timestamp), even one that still matches. Write
 * timestamps are the coordinators' (session.ts), so this holds as far as the nodes' clocks agree.
 *
 * TTL (VectorRow.expiresAt) is the engine's own: every row INSERT says `USING TTL n` (n = 0: never,
 * which also overrides a table default), and the postings of an expiring row carry the same TTL,
 * so the row, its postings and its count (expiry-counts.ts) vanish together at the engine's clock, to
 * the second. The table's default TTL is the Cassandra table's `default_time_to_live`; the service
 * resolves it into each write (remembered for a second: getDefaultTtl), so the engine applies it
 * only to rows other CQL clients write.
 * The lexical statistics count an expiring row in the bucket of its expiry (lexical-stats.ts), so
 * it leaves them when it expires too.
 */
import cassandra from 'cassandra-driver';
import { type FieldError, invalid } from '../../errors.ts';
import { compileFilter } from '../../index/filter.ts';
import { type Filter, MAX_TTL_SECONDS, type TableInfo, type VectorRow } from '../api.ts';
import { requireRowDimensions } from '../vector-dimension.ts';
import { checkIndexable, chunks, fromCqlVector, fromMetadataText, toCqlVector, toMetadataText, utf8Bytes } from './codec.ts';
import { forgetTable, requireTable } from './catalog.ts';
import { type Ctx, dataTable, physicalKeyspace } from './context.ts';
import { markExpiring, rowCount, RowCountChange, stopCounting, type StoredTable } from './counts.ts';
import { expiryBucket } from './expiry-counts.ts';
import { filterQuery, metadataTerms, whereTerms } from './filter-terms.ts';
import type { ErrorContext } from './driver-errors.ts';
import { indexed, postingChanges, postingDeletes, type Stmt } from './lexical.ts';
import { StatsChange } from './lexical-stats.ts';
import { memosOf, tableId } from './memos.ts';
import { forEachLimit } from './session.ts';

/** Well below Cassandra's default batch_size_fail_threshold (50 KiB), as Cassandra counts it. */
const LOGGED_BATCH_MAX_BYTES = 24 * 1024;
/** Rows (each with its postings) in flight per call: 8 left Cassandra idle between a call's reads and writes. */
const WRITE_CONCURRENCY = 32;
const IN_CHUNK = 100;

/** A write timestamp (microseconds since the epoch) as the driver reads and binds a bigint. */
type Long = InstanceType<typeof cassandra.types.Long>;

export async function upsertVectors(ctx: Ctx, keyspace: string, table: string, rows: VectorRow[]): Promise<void> {
  const t = await requireTable(ctx, keyspace, table);
  await writeRows(ctx, t, validateRows(t, rows));
}

/**
 * Checks rows against the table (throws dimension_mismatch, or validation_failed for what the
 * vector index refuses: codec.ts checkIndexable); the service checked the rest. Last row of a key wins.
 */
export function validateRows(t: TableInfo, rows: VectorRow[], basePath = ''): VectorRow[] {
  requireRowDimensions(rows, t.dimension, basePath);
  const errors: FieldError[] = [];
  rows.forEach((r, i) => {
    const e = checkIndexable(r.vector, t.metric, `${basePath}/${i}/vector`);
    if (e) errors.push(e);
  });
  if (errors.length > 0) throw invalid(errors);
  const byKey = new Map<string, VectorRow>();
  for (const r of rows) {
    byKey.delete(r.key);
    byKey.set(r.key, r);
  }
  return [...byKey.values()];
}

/**
 * Writes validated rows with their lexical postings (lexical.ts): one LOGGED batch when small
 * enough, else one batch per row (8 rows in flight, each retried on timeouts); then the counters.
 */
export async function writeRows(ctx: Ctx, t: StoredTable, rows: VectorRow[]): Promise<void> {
  if (rows.length === 0) return;
  const clock = Date.now();
  // A table without expiry buckets (made before them) cannot count rows that expire: from its
  // first such row it is counted by its keys (which the engine hides once expired).
  // Once: the remembered entry goes with the flag, so later writes read the table as uncounted.
  if (t.counted && !t.expiryCounts && rows.some((r) => r.expiresAt !== null && r.expiresAt !== undefined)) {
    await stopCounting(ctx, t);
    forgetTable(ctx, t.keyspace, t.name);
  }
  const expiring = new Set<string>();
  const buckets = new Map<string, number>();
  const anyExpiring = t.expiryCounts && rows.some((r) => r.expiresAt !== null && r.expiresAt !== undefined);
  const [before] = await Promise.all([currentTexts(ctx, t, rows.map((r) => r.key), expiring, buckets), anyExpiring ? markExpiring(ctx, t) : undefined]);
  const stats = await StatsChange.of(ctx, t, expiring);
  const counts = new RowCountChange();
  const groups = rows.map((r) => {
    const ttl = ttlSeconds(r.expiresAt, clock);
    const bucket = t.expiryCounts && ttl > 0 ? expiryBucket(clock, ttl) : null;
    if (before.has(r.key)) counts.remove(buckets.get(r.key) ?? null);
    counts.add(bucket);
    const row = rowInsert(ctx, t, r, ttl, bucket, buckets.has(r.key));
    const old = indexed(t, before.get(r.key));
    const now = indexed(t, r.text);
    stats.remove(r.key, old);
    const statsBucket = stats.add(r.key, now, ttl, clock);
    const { inserts, deletes } = postingChanges(ctx, t, r.key, old, now);
    // If the row's statements must be split, new postings go first and stale ones last: a crash
    // midway leaves stale postings (a search drops them), never a row missing from the index.
    return [...inserts.map((s) => withTtl(s, ttl)), ...statsBucket, row, ...deletes];
  });
  await writeGroups(ctx, groups, { keyspace: t.keyspace, table: t.name, action: 'writing vectors' });
  await stats.apply();
  await counts.apply(ctx, t);
}

/**
 * The INSERT of one row with every column, its metadata also as filter terms (filter-terms.ts),
 * expiring after `ttl` seconds (0: never, which also overrides a table's default_time_to_live),
 * with its expiry bucket on tables that count by them (null clears one the row had; left unset
 * otherwise, so rows that never expire carry no tombstone).
 */
function rowInsert(ctx: Ctx, t: StoredTable, r: VectorRow, ttl: number, bucket: number | null, hadBucket: boolean): Stmt {
  const metadata = toMetadataText(r.metadata);
  const terms = metadataTerms(r.metadata ?? {});
  const termBytes = terms.reduce((n, x) => n + utf8Bytes(x) + 8, 0);
  const bytes = utf8Bytes(r.key) + 4 * t.dimension + utf8Bytes(metadata) + utf8Bytes(r.text) + termBytes + 128;
  const params = [r.key, toCqlVector(r.vector), metadata, r.text ?? null, terms];
  if (!t.expiryCounts) {
    return { query: `INSERT INTO ${dataTable(ctx, t.keyspace, t.name)} ("key", "vector", "metadata", "text", "terms") VALUES (?, ?, ?, ?, ?) USING TTL ?`, params: [...params, ttl], bytes };
  }
  const expiry = bucket !== null ? cassandra.types.Long.fromNumber(bucket) : hadBucket ? null : cassandra.types.unset;
  const cql = `INSERT INTO ${dataTable(ctx, t.keyspace, t.name)} ("key", "vector", "metadata", "text", "terms", "expiry_bucket") VALUES (?, ?, ?, ?, ?, ?) USING TTL ?`;
  return { query: cql, params: [...params, expiry, ttl], bytes: bytes + 8 };
}

/**
 * The TTL in seconds a write of a row expiring at `expiresAt` says, as of `now` (0: never). A
 * time already past gives 1 s, the engine's least: the row then lives at most that second.
 */
export function ttlSeconds(expiresAt: number | null | undefined, now: number): number {
  if (expiresAt === null || expiresAt === undefined) return 0;
  return Math.min(MAX_TTL_SECONDS, Math.max(1, Math.ceil((expiresAt - now) / 1000)));
}

/** An INSERT statement that expires after `ttl` seconds (unchanged for 0, which is never). */
export const withTtl = (s: Stmt, ttl: number): Stmt => (ttl === 0 ? s : { ...s, query: `${s.query} USING TTL ?`, params: [...s.params, ttl] });

/**
 * When a cell read with `TTL(...)` = `ttl` seconds left expires, in ms: the engine keeps expiry
 * in whole seconds, so this is its second (null: no TTL).
 */
export const expiryOf = (ttl: unknown): number | null => (typeof ttl === 'number' && ttl > 0 ? (Math.floor(Date.now() / 1000) + ttl) * 1000 : null);

/** A row's expiresAt as answered from its TTL: only rows that expire carry the field. */
const expiryField = (ttl: unknown): { expiresAt?: number } => {
  const at = expiryOf(ttl);
  return at !== null ? { expiresAt: at } : {};
};

/**
 * The table's default TTL: its Cassandra `default_time_to_live` (0 there: none). Remembered for
 * TABLE_FACTS_MS (memos.ts), so writes do not read the schema each time: a change through this
 * process applies at once, one through another process within that second.
 */
export async function getDefaultTtl(ctx: Ctx, keyspace: string, table: string): Promise<number | null> {
  await requireTable(ctx, keyspace, table);
  const ttl = await memosOf(ctx).defaultTtls.get(tableId(keyspace, table), async () => {
    const rs = await ctx.session.execute('read', 'SELECT default_time_to_live FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?', [physicalKeyspace(ctx, keyspace), table], {
      ctx: { keyspace, table, action: 'reading the default TTL' },
    });
    return (rs.first()?.default_time_to_live as number | undefined) ?? 0;
  });
  return ttl !== null && ttl > 0 ? ttl : null;
}

export async function setDefaultTtl(ctx: Ctx, keyspace: string, table: string, seconds: number | null): Promise<void> {
  await requireTable(ctx, keyspace, table);
  if (seconds !== null && !(Number.isInteger(seconds) && seconds >= 1 && seconds <= MAX_TTL_SECONDS)) {
    throw invalid([{ path: '/default_ttl_seconds', message: `must be an integer from 1 to ${MAX_TTL_SECONDS}, or null` }]);
  }
  await memosOf(ctx).defaultTtls.changing(
    tableId(keyspace, table),
    () => ctx.session.execute('ddl', `ALTER TABLE ${dataTable(ctx, keyspace, table)} WITH default_time_to_live = ${seconds ?? 0}`, [], {
      ctx: { keyspace, table, action: 'setting the default TTL' },
    }),
    () => seconds ?? 0,
  );
}

/**
 * Runs groups of statements, each group as atomic as its size allows: all in one LOGGED batch when
 * they fit, else each group as one (WRITE_CONCURRENCY in flight), and a group too large for a batch as consecutive
 * batches in its order.
 */
export async function writeGroups(ctx: Ctx, groups: Stmt[][], errCtx: ErrorContext): Promise<void> {
  const all = groups.flat();
  const size = (ss: Stmt[]): number => ss.reduce((s, x) => s + x.bytes, 0);
  const run = async (ss: Stmt[]): Promise<void> => {
    if (ss.length === 0) return;
    if (ss.length === 1) return ctx.session.write(ss[0].query, ss[0].params, errCtx);
    if (size(ss) <= LOGGED_BATCH_MAX_BYTES) return ctx.session.batch(ss, true, errCtx);
    let part: Stmt[] = [];
    for (const s of ss) {
      if (part.length > 0 && size(part) + s.bytes > LOGGED_BATCH_MAX_BYTES) {
        await run(part);
        part = [];
      }
      part.push(s);
    }
    await run(part);
  };
  if (size(all) <= LOGGED_BATCH_MAX_BYTES) return run(all);
  await forEachLimit(groups, WRITE_CONCURRENCY, run);
}

/**
 * The text of those of `keys` that exist (null: a row without text), one read per 100 keys; adds
 * to `expiring` those whose text has a TTL, and to `buckets` the expiry bucket of those that have one.
 */
async function currentTexts(ctx: Ctx, t: StoredTable, keys: string[], expiring: Set<string>, buckets: Map<string, number>): Promise<Map<string, string | null>> {
  const found = new Map<string, string | null>();
  const cql = `SELECT "key", "text", TTL("text") AS ttl${bucketColumn(t)} FROM ${dataTable(ctx, t.keyspace, t.name)} WHERE "key" IN ?`;
  await forEachLimit(chunks([...new Set(keys)], IN_CHUNK), 8, async (part) => {
    const rs = await ctx.session.execute('read', cql, [part], { ctx: { keyspace: t.keyspace, table: t.name, action: 'reading rows' } });
    for (const r of rs.rows) {
      found.set(r.key as string, (r.text as string | null) ?? null);
      if (r.ttl != null) expiring.add(r.key as string);
      if (r.expiry_bucket != null) buckets.set(r.key as string, Number(String(r.expiry_bucket)));
    }
  });
  return found;
}

/** The expiry bucket as a selected column, on tables that have it. */
const bucketColumn = (t: StoredTable): string => (t.expiryCounts ? ', "expiry_bucket"' : '');

export async function getVector(ctx: Ctx, keyspace: string, table: string, key: string): Promise<VectorRow | null> {
  await requireTable(ctx, keyspace, table);
  const rs = await ctx.session.execute('read', `SELECT "key", "vector", "metadata", "text", TTL("vector") AS ttl FROM ${dataTable(ctx, keyspace, table)} WHERE "key" = ?`, [key], {
    ctx: { keyspace, table, action: 'reading a vector' },
  });
  if (rs.rowLength === 0) return null;
  const r = rs.first();
  return { key: r.key as string, vector: fromCqlVector(r.vector), metadata: fromMetadataText(r.metadata), text: (r.text as string | null) ?? null, ...expiryField(r.ttl) };
}

/** Deletes those of the keys that exist as of now (plain DELETEs, the coordinator's timestamp) with the postings of their text as read; answers how many existed. */
export async function deleteKeys(ctx: Ctx, t: StoredTable, keys: string[]): Promise<number> {
  const expiring = new Set<string>();
  const buckets = new Map<string, number>();
  const texts = await currentTexts(ctx, t, keys, expiring, buckets);
  await deleteRows(ctx, t, [...texts].map(([key, text]) => ({ key, at: null, text, bucket: buckets.get(key) ?? null })), expiring);
  return texts.size;
}

/** A key to delete and its text; with `at`, only cells written at or before that timestamp (`USING TIMESTAMP`). */
interface Doomed {
  key: string;
  at: Long | null;
  text: string | null;
  /** The expiry bucket it was counted in (null: none). */
  bucket: number | null;
}

/** Deletes rows that existed when read, with their postings; then the counters. `expiring`: those whose text was read with a TTL. */
async function deleteRows(ctx: Ctx, t: StoredTable, rows: Doomed[], expiring: ReadonlySet<string>): Promise<void> {
  const from = dataTable(ctx, t.keyspace, t.name);
  const now = `DELETE FROM ${from} WHERE "key" = ?`;
  // Each statement carries its own timestamp (a batch has none), as CQL allows.
  const asOf = `DELETE FROM ${from} USING TIMESTAMP ? WHERE "key" = ?`;
  const stats = await StatsChange.of(ctx, t, expiring);
  const counts = new RowCountChange();
  const groups = rows.map((r) => {
    counts.remove(r.bucket);
    const row: Stmt = r.at === null ? { query: now, params: [r.key], bytes: utf8Bytes(r.key) + 64 } : { query: asOf, params: [r.at, r.key], bytes: utf8Bytes(r.key) + 64 };
    const old = indexed(t, r.text);
    stats.remove(r.key, old);
    return [row, ...postingDeletes(ctx, t, r.key, old, r.at)];
  });
  await writeGroups(ctx, groups, { keyspace: t.keyspace, table: t.name, action: 'deleting vectors' });
  await stats.apply();
  await counts.apply(ctx, t);
}

/** Deletes the keys; answers how many of them existed (read before delete). */
export async function deleteVectors(ctx: Ctx, keyspace: string, table: string, keys: string[]): Promise<number> {
  const t = await requireTable(ctx, keyspace, table);
  const unique = [...new Set(keys.filter((k) => typeof k === 'string' && k.length > 0))];
  if (unique.length === 0) return 0;
  return deleteKeys(ctx, t, unique);
}

export function compile(filter: Filter): (m: ReturnType<typeof fromMetadataText>) => boolean {
  try {
    return compileFilter(filter);
  } catch (err) {
    throw invalid([{ path: '/filter', message: (err as Error).message }]);
  }
}

/** Rows whose metadata matches, by a paged scan of "key", "metadata" and `more` columns: O(rows). */
async function* matching(ctx: Ctx, keyspace: string, table: string, filter: Filter, more = ''): AsyncGenerator<cassandra.types.Row> {
  const match = compile(filter);
  for await (const page of ctx.session.pages(`SELECT "key", "metadata"${more} FROM ${dataTable(ctx, keyspace, table)}`, [], {
    fetchSize: 2000,
    ctx: { keyspace, table, action: 'scanning metadata' },
  })) {
    for (const r of page) if (match(fromMetadataText(r.metadata))) yield r;
  }
}

/**
 * Rows whose metadata matches, each with the newest write time among its cells as this scan read
 * them. Every row this backend writes has "vector" and "metadata" set (one INSERT of all columns,
 * so one timestamp); "text" may be null, and WRITETIME of a null cell is null. A row with no
 * timestamp at all (none of its cells set: not one this backend writes) gets a plain delete.
 */
async function matchingRows(ctx: Ctx, t: StoredTable, filter: Filter, expiring: Set<string>): Promise<Doomed[]> {
  const out: Doomed[] = [];
  const more = `, "text", WRITETIME("vector") AS wv, WRITETIME("metadata") AS wm, WRITETIME("text") AS wt, TTL("text") AS tl${bucketColumn(t)}`;
  for await (const r of matching(ctx, t.keyspace, t.name, filter, more)) {
    if (r.tl != null) expiring.add(r.key as string);
    let at: Long | null = null;
    for (const w of [r.wv, r.wm, r.wt] as (Long | null)[]) if (w !== null && w !== undefined && (at === null || w.greaterThan(at))) at = w;
    out.push({ key: r.key as string, at, text: (r.text as string | null) ?? null, bucket: r.expiry_bucket != null ? Number(String(r.expiry_bucket)) : null });
  }
  return out;
}

/**
 * Deletes the rows matching `filter` as the scan found them: a row rewritten (or re-created) after
 * the scan read it keeps its new version, matching or not; one deleted meanwhile stays deleted.
 * Answers how many rows the scan matched.
 */
export async function deleteByFilter(ctx: Ctx, keyspace: string, table: string, filter: Filter): Promise<number> {
  const t = await requireTable(ctx, keyspace, table);
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) throw invalid([{ path: '/filter', message: 'must be an object' }]);
  const expiring = new Set<string>();
  const rows = await matchingRows(ctx, t, filter, expiring);
  await deleteRows(ctx, t, rows, expiring);
  return rows.length;
}

/**
 * Without a filter: the row counter (counts.ts). With one the index serves (filter-terms.ts): the
 * engine counts each conjunction (SELECT COUNT(*) ... WHERE "terms" CONTAINS ...), or, for several,
 * the union of their keys. Other filters: a scan of every row's metadata (O(rows)).
 */
export async function countVectors(ctx: Ctx, keyspace: string, table: string, filter?: Filter): Promise<number> {
  const t = await requireTable(ctx, keyspace, table, { fresh: true });
  if (filter === undefined || Object.keys(filter).length === 0) return rowCount(ctx, t);
  compile(filter);
  const plan = filterQuery(filter);
  if (t.filterTerms && 'branches' in plan) {
    const from = dataTable(ctx, keyspace, table);
    const errCtx = { keyspace, table, action: 'counting matches' };
    if (plan.branches.length === 1) {
      const rs = await ctx.session.execute('read', `SELECT COUNT(*) AS n FROM ${from} WHERE ${whereTerms(plan.branches[0])}`, plan.branches[0], { ctx: errCtx });
      return Number(String(rs.first()?.n ?? 0));
    }
    const keys = new Set<string>();
    for (const terms of plan.branches) {
      for await (const page of ctx.session.pages(`SELECT "key" FROM ${from} WHERE ${whereTerms(terms)}`, terms, { fetchSize: 5000, ctx: errCtx })) {
        for (const r of page) keys.add(r.key as string);
      }
    }
    return keys.size;
  }
  let n = 0;
  for await (const _ of matching(ctx, keyspace, table, filter)) n++;
  return n;
}


const MAX_SCAN_PAGE = 10_000;

/**
 * Pages through a table in token order (Murmur3 of the key: stable, not alphabetical). The cursor
 * is the last key of the page, base64url-encoded; the next page starts after its token.
 */
export async function scanVectors(
  ctx: Ctx,
  keyspace: string,
  table: string,
  opts: { cursor?: string | null; limit: number },
): Promise<{ rows: VectorRow[]; cursor: string | null }> {
  await requireTable(ctx, keyspace, table);
  const limit = Math.max(1, Math.min(Math.floor(Number(opts.limit) || 1), MAX_SCAN_PAGE));
  let after: string | null = null;
  if (opts.cursor !== undefined && opts.cursor !== null) {
    after = Buffer.from(opts.cursor, 'base64url').toString('utf8');
    if (after === '' || Buffer.from(after, 'utf8').toString('base64url') !== opts.cursor) throw invalid([{ path: '/cursor', message: 'is not a cursor this table gave' }]);
  }
  const cols = '"key", "vector", "metadata", "text", TTL("vector") AS ttl';
  const from = dataTable(ctx, keyspace, table);
  const rs =
    after === null
      ? await ctx.session.execute('read', `SELECT ${cols} FROM ${from} LIMIT ?`, [limit + 1], { fetchSize: limit + 1, ctx: { keyspace, table, action: 'scanning' } })
      : await ctx.session.execute('read', `SELECT ${cols} FROM ${from} WHERE token("key") > token(?) LIMIT ?`, [after, limit + 1], {
          fetchSize: limit + 1,
          ctx: { keyspace, table, action: 'scanning' },
        });
  const rows = rs.rows.slice(0, limit).map((r) => ({
    key: r.key as string,
    vector: fromCqlVector(r.vector),
    metadata: fromMetadataText(r.metadata),
    text: (r.text as string | null) ?? null,
    ...expiryField(r.ttl),
  }));
  const more = rs.rows.length > limit;
  return { rows, cursor: more ? Buffer.from(rows[rows.length - 1].key, 'utf8').toString('base64url') : null };
}
