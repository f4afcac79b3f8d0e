/**
 * Keyspaces and tables. The catalog rows in the system keyspace are the truth about what exists
 * (owner, dimension, metric, model); each keyspace is a Cassandra keyspace and each table a
 * Cassandra table with an SAI vector index:
 *
 *   CREATE TABLE ks.t (key text PRIMARY KEY, vector vector<float, D>, metadata text, text text, terms set<text>,
 *                      expiry_bucket bigint)
 *   CREATE CUSTOM INDEX t_vector_idx ON ks.t (vector) USING 'StorageAttachedIndex'
 *     WITH OPTIONS = {'similarity_function': 'cosine' | 'dot_product' | 'euclidean'}
 *   CREATE CUSTOM INDEX t_terms_idx ON ks.t (values(terms)) USING 'StorageAttachedIndex'
 *   CREATE CUSTOM INDEX t_expiry_idx ON ks.t (expiry_bucket) USING 'StorageAttachedIndex'
 *
 * "terms" holds each row's metadata as SAI-indexable terms (filter-terms.ts); tables made before it
 * get the column and index at the next start (ensureTermsColumns) and their rows' terms in the
 * background (terms-backfill.ts). "expiry_bucket" counts expiring rows (expiry-counts.ts); tables
 * made before it are counted by a key scan once they hold expiring rows.
 *
 * Names are claimed with a lightweight transaction on the catalog row first (so two processes
 * cannot both create one name), then the schema is created; a failed schema change releases the
 * claim. A process that loses the claim waits for the winner's table instead of issuing the same
 * DDL concurrently (Cassandra 5 can give concurrently created tables different ids).
 */
import { ServiceError, invalid } from '../../errors.ts';
import { METRICS, type Metric } from '../../index/metric.ts';
import { DEFAULT_LEXICAL, type KeyspaceInfo, LEXICAL_TOKENIZERS, type LexicalSettings, type LexicalTokenizer, type TableInfo, type TableStats } from '../api.ts';
import { iso } from './codec.ts';
import { type Ctx, dataTable, physicalKeyspace, sysTable } from './context.ts';
import { rowCount, type StoredTable } from './counts.ts';
import { isReservedKeyspace, isValidName, q, requireValidName, requireValidReplication, termsIndexName, vectorIndexName, expiryIndexName } from './names.ts';
import type { Row } from './session.ts';

const SIMILARITY: Record<Metric, string> = { cosine: 'cosine', dot_product: 'dot_product', euclidean: 'euclidean' };

const keyspaceFromRow = (r: Row): KeyspaceInfo => ({
  name: r.name as string,
  owner: (r.owner as string | null) ?? null,
  replication: r.replication as string,
  createdAt: iso(r.created_at),
});

const tableFromRow = (r: Row): TableInfo => ({
  keyspace: r.keyspace_name as string,
  name: r.table_name as string,
  dimension: r.dimension as number,
  metric: r.metric as Metric,
  model: (r.model as string | null) ?? null,
  lexical: { tokenizer: (r.lexical_tokenizer as LexicalTokenizer | null) ?? DEFAULT_LEXICAL.tokenizer },
  createdAt: iso(r.created_at),
});

const storedFromRow = (r: Row): StoredTable => ({
  ...tableFromRow(r),
  counted: r.counted === true,
  countCorrection: r.count_correction === null || r.count_correction === undefined ? 0 : Number(String(r.count_correction)),
  filterTerms: r.filter_terms === true,
  expiryCounts: r.expiry_counts === true,
});

/** The contract's view of a table (the backend's own state left out). */
const publicTable = ({ counted: _c, countCorrection: _k, filterTerms: _f, expiryCounts: _e, ...t }: StoredTable): TableInfo => t;

const TABLE_COLS = 'keyspace_name, table_name, dimension, metric, model, created_at, lexical_tokenizer, filter_terms, counted, count_correction, expiry_counts';

/** The lexical settings a new table asks for (default porter); validation_failed names a bad tokenizer. */
function lexicalSettings(lexical: LexicalSettings | undefined): LexicalSettings {
  const tokenizer = lexical?.tokenizer ?? DEFAULT_LEXICAL.tokenizer;
  if (!LEXICAL_TOKENIZERS.includes(tokenizer)) throw invalid([{ path: '/lexical/tokenizer', message: `must be one of ${LEXICAL_TOKENIZERS.join(', ')}` }]);
  return { tokenizer };
}

async function cqlKeyspaceExists(ctx: Ctx, name: string): Promise<boolean> {
  const rs = await ctx.session.execute('read', 'SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?', [name]);
  return rs.rowLength > 0;
}

async function cqlTableExists(ctx: Ctx, keyspace: string, table: string): Promise<boolean> {
  const rs = await ctx.session.execute('read', 'SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?', [keyspace, table]);
  return rs.rowLength > 0;
}

export async function createKeyspace(ctx: Ctx, ks: { name: string; owner: string | null; replication?: string }): Promise<KeyspaceInfo> {
  requireValidName(ks.name, 'keyspace', '/keyspace');
  const replication = requireValidReplication(ks.replication ?? ctx.replication);
  const physical = physicalKeyspace(ctx, ks.name);
  if (physical.length > 48) {
    throw invalid([{ path: '/keyspace', message: `must be at most ${48 - ctx.keyspacePrefix.length} characters with this deployment's keyspace prefix` }]);
  }
  const err = { keyspace: ks.name, action: `creating keyspace "${ks.name}"` };
  if (isReservedKeyspace(ks.name, ctx.systemKeyspace) || isReservedKeyspace(physical, ctx.systemKeyspace) || (await cqlKeyspaceExists(ctx, physicalKeyspace(ctx, ks.name)) && (await getKeyspace(ctx, ks.name)) === null)) {
    throw new ServiceError('already_exists', `Keyspace "${ks.name}" already exists.`);
  }
  const createdAt = new Date();
  const claim = await ctx.session.execute(
    'lwt',
    `INSERT INTO ${sysTable(ctx, 'keyspaces')} (name, owner, replication, created_at) VALUES (?, ?, ?, ?) IF NOT EXISTS`,
    [ks.name, ks.owner, replication, createdAt],
    { ctx: err },
  );
  if (!claim.wasApplied()) throw new ServiceError('already_exists', `Keyspace "${ks.name}" already exists.`);
  try {
    await ctx.session.execute('ddl', `CREATE KEYSPACE IF NOT EXISTS ${q(physicalKeyspace(ctx, ks.name))} WITH replication = ${replication}`, [], { ctx: err });
  } catch (e) {
    await ctx.session.execute('write', `DELETE FROM ${sysTable(ctx, 'keyspaces')} WHERE name = ?`, [ks.name]).catch(() => undefined);
    throw e;
  }
  const made: KeyspaceInfo = { name: ks.name, owner: ks.owner, replication, createdAt: createdAt.toISOString() };
  remember(knownOf(ctx).keyspaces, ks.name, made);
  return made;
}

/**
 * Catalog entries this process has read, per store: a keyspace's and a table's facts never change
 * once made (nothing drops or alters them), so every search and write need not read them again.
 * Only what exists is kept (a name made by another process is read at its first use): what this
 * process made once its DDL succeeded, and what it read older than SETTLED_MS, since a creation
 * whose DDL fails releases its claim within that and the name may then be made again differently. Tables only once their derived state is final
 * (terms filled, counted): `filterTerms` only ever turns true, and a table marked uncounted after a
 * failed counter update is read afresh by countVectors and listTables (`fresh`); a search here may
 * plan with its stale count until this process restarts (counts.ts).
 */
const known = new WeakMap<Ctx, { keyspaces: Map<string, KeyspaceInfo>; tables: Map<string, StoredTable> }>();
const KNOWN_MAX = 10_000;
const SETTLED_MS = 120_000;
const settled = (createdAt: string): boolean => Date.now() - Date.parse(createdAt) > SETTLED_MS;

function knownOf(ctx: Ctx): { keyspaces: Map<string, KeyspaceInfo>; tables: Map<string, StoredTable> } {
  let k = known.get(ctx);
  if (k === undefined) known.set(ctx, (k = { keyspaces: new Map(), tables: new Map() }));
  return k;
}

function remember<T>(m: Map<string, T>, id: string, v: T): void {
  if (m.size >= KNOWN_MAX) m.clear();
  m.set(id, v);
}

/** Drops what this process remembers of a table (it was marked uncounted), so its next use reads the catalog. */
export function forgetTable(ctx: Ctx, keyspace: string, name: string): void {
  knownOf(ctx).tables.delete(`${keyspace}.${name}`);
}

export async function getKeyspace(ctx: Ctx, name: string): Promise<KeyspaceInfo | null> {
  const cached = knownOf(ctx).keyspaces.get(name);
  if (cached !== undefined) return cached;
  const ks = await readKeyspace(ctx, name);
  if (ks !== null && settled(ks.createdAt)) remember(knownOf(ctx).keyspaces, name, ks);
  return ks;
}

async function readKeyspace(ctx: Ctx, name: string): Promise<KeyspaceInfo | null> {
  if (!isValidName(name)) return null;
  const rs = await ctx.session.execute('read', `SELECT name, owner, replication, created_at FROM ${sysTable(ctx, 'keyspaces')} WHERE name = ?`, [name], {
    ctx: { keyspace: name, action: 'reading the catalog' },
  });
  return rs.rowLength > 0 ? keyspaceFromRow(rs.first()) : null;
}

/** The catalog is small: a paged scan, filtered and sorted by name here. */
export async function listKeyspaces(ctx: Ctx, owner?: string): Promise<KeyspaceInfo[]> {
  const out: KeyspaceInfo[] = [];
  for await (const page of ctx.session.pages(`SELECT name, owner, replication, created_at FROM ${sysTable(ctx, 'keyspaces')}`)) {
    for (const r of page) {
      const k = keyspaceFromRow(r);
      if (owner === undefined || k.owner === owner) out.push(k);
    }
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export async function getTable(ctx: Ctx, keyspace: string, name: string): Promise<TableInfo | null> {
  const t = await getStoredTable(ctx, keyspace, name);
  return t === null ? null : publicTable(t);
}

/** The table as the catalog holds it; `fresh` skips what this process remembers (for the counted flag). */
async function getStoredTable(ctx: Ctx, keyspace: string, name: string, fresh = false): Promise<StoredTable | null> {
  const id = `${keyspace}.${name}`;
  const cached = fresh ? undefined : knownOf(ctx).tables.get(id);
  if (cached !== undefined) return cached;
  const t = await readTable(ctx, keyspace, name);
  if (t !== null && t.filterTerms && t.counted && settled(t.createdAt)) remember(knownOf(ctx).tables, id, t);
  return t;
}

async function readTable(ctx: Ctx, keyspace: string, name: string): Promise<StoredTable | null> {
  if (!isValidName(keyspace) || !isValidName(name)) return null;
  const rs = await ctx.session.execute(
    'read',
    `SELECT ${TABLE_COLS} FROM ${sysTable(ctx, 'tables')} WHERE keyspace_name = ? AND table_name = ?`,
    [keyspace, name],
    { ctx: { keyspace, table: name, action: 'reading the catalog' } },
  );
  return rs.rowLength > 0 ? storedFromRow(rs.first()) : null;
}

/** The table's catalog entry; keyspace_not_found or table_not_found when either is missing. */
export async function requireTable(ctx: Ctx, keyspace: string, name: string, opts: { fresh?: boolean } = {}): Promise<StoredTable> {
  const t = await getStoredTable(ctx, keyspace, name, opts.fresh);
  if (t !== null) return t;
  if ((await getKeyspace(ctx, keyspace)) === null) throw new ServiceError('keyspace_not_found', `Keyspace "${keyspace}" does not exist.`);
  throw new ServiceError('table_not_found', `Table "${name}" does not exist in keyspace "${keyspace}".`);
}

export async function createTable(
  ctx: Ctx,
  t: { keyspace: string; name: string; dimension: number; metric: Metric; model: string | null; lexical?: LexicalSettings },
  opts: { ifNotExists?: boolean } = {},
): Promise<TableInfo> {
  requireValidName(t.name, 'table', '/table');
  if (!Number.isInteger(t.dimension) || t.dimension < 1 || t.dimension > 8192) {
    throw invalid([{ path: '/dimension', message: 'must be an integer from 1 to 8192' }]);
  }
  if (!(METRICS as readonly string[]).includes(t.metric)) throw new ServiceError('unknown_metric', `Unknown metric "${t.metric}".`);
  const lexical = lexicalSettings(t.lexical);
  const ks = await getKeyspace(ctx, t.keyspace);
  if (ks === null) throw new ServiceError('keyspace_not_found', `Keyspace "${t.keyspace}" does not exist.`);

  const err = { keyspace: t.keyspace, table: t.name, action: `creating table "${t.name}"` };
  const createdAt = new Date();
  const claim = await ctx.session.execute(
    'lwt',
    `INSERT INTO ${sysTable(ctx, 'tables')} (keyspace_name, table_name, dimension, metric, model, created_at, lexical_tokenizer, filter_terms, counted, expiry_counts) VALUES (?, ?, ?, ?, ?, ?, ?, true, true, true) IF NOT EXISTS`,
    [t.keyspace, t.name, t.dimension, t.metric, t.model, createdAt, lexical.tokenizer],
    { ctx: err },
  );
  if (!claim.wasApplied()) {
    if (!opts.ifNotExists) throw new ServiceError('already_exists', `Table "${t.name}" already exists in keyspace "${t.keyspace}".`);
    const existing = await requireTable(ctx, t.keyspace, t.name);
    await awaitTableSchema(ctx, ks, existing);
    return publicTable(existing);
  }
  const info: TableInfo = { keyspace: t.keyspace, name: t.name, dimension: t.dimension, metric: t.metric, model: t.model, lexical, createdAt: createdAt.toISOString() };
  try {
    await createTableSchema(ctx, ks, info);
  } catch (e) {
    await ctx.session
      .execute('write', `DELETE FROM ${sysTable(ctx, 'tables')} WHERE keyspace_name = ? AND table_name = ?`, [t.keyspace, t.name])
      .catch(() => undefined);
    throw e;
  }
  remember(knownOf(ctx).tables, `${t.keyspace}.${t.name}`, { ...info, counted: true, countCorrection: 0, filterTerms: true, expiryCounts: true });
  return info;
}

async function createTableSchema(ctx: Ctx, ks: KeyspaceInfo, t: TableInfo): Promise<void> {
  const err = { keyspace: t.keyspace, table: t.name, action: `creating table "${t.name}"` };
  // Repairs a keyspace whose catalog row was written by a process that died before its DDL.
  if (!(await cqlKeyspaceExists(ctx, physicalKeyspace(ctx, ks.name)))) {
    await ctx.session.execute('ddl', `CREATE KEYSPACE IF NOT EXISTS ${q(physicalKeyspace(ctx, ks.name))} WITH replication = ${requireValidReplication(ks.replication)}`, [], { ctx: err });
  }
  const table = dataTable(ctx, t.keyspace, t.name);
  await ctx.session.execute(
    'ddl',
    `CREATE TABLE IF NOT EXISTS ${table} ("key" text PRIMARY KEY, "vector" vector<float, ${t.dimension}>, "metadata" text, "text" text, "terms" set<text>, "expiry_bucket" bigint)`,
    [],
    { ctx: err },
  );
  await createTermsIndex(ctx, t);
  await ctx.session.execute('ddl', `CREATE CUSTOM INDEX IF NOT EXISTS ${q(expiryIndexName(t.name))} ON ${table} ("expiry_bucket") USING 'StorageAttachedIndex'`, [], { ctx: err });
  await ctx.session.execute(
    'ddl',
    `CREATE CUSTOM INDEX IF NOT EXISTS ${q(vectorIndexName(t.name))} ON ${table} ("vector") USING 'StorageAttachedIndex' WITH OPTIONS = {'similarity_function': '${SIMILARITY[t.metric]}'}`,
    [],
    { ctx: err },
  );
}

async function createTermsIndex(ctx: Ctx, t: TableInfo): Promise<void> {
  const err = { keyspace: t.keyspace, table: t.name, action: `indexing the metadata of table "${t.name}"` };
  await ctx.session.execute('ddl', `CREATE CUSTOM INDEX IF NOT EXISTS ${q(termsIndexName(t.name))} ON ${dataTable(ctx, t.keyspace, t.name)} (values("terms")) USING 'StorageAttachedIndex'`, [], { ctx: err });
}

/**
 * Gives tables made before the "terms" column that column and its index (idempotent; run at start,
 * before this process writes, since every write sets "terms"). Their rows' terms follow in the
 * background (terms-backfill.ts); until then filters on them take the fallback in search.ts.
 */
export async function ensureTermsColumns(ctx: Ctx): Promise<StoredTable[]> {
  const pending: StoredTable[] = [];
  for await (const page of ctx.session.pages(`SELECT ${TABLE_COLS} FROM ${sysTable(ctx, 'tables')}`)) {
    for (const r of page) if (r.filter_terms !== true) pending.push(storedFromRow(r));
  }
  for (const t of pending) {
    const physical = physicalKeyspace(ctx, t.keyspace);
    const cols = await ctx.session.execute('read', 'SELECT column_name FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?', [physical, t.name]);
    if (cols.rowLength === 0) continue; // its schema is not there (a creation that died): createTable repairs it.
    if (!cols.rows.some((c) => c.column_name === 'terms')) {
      try {
        await ctx.session.execute('ddl', `ALTER TABLE ${dataTable(ctx, t.keyspace, t.name)} ADD "terms" set<text>`, [], { ctx: { keyspace: t.keyspace, table: t.name, action: 'adding the terms column' } });
      } catch (err) {
        // Another process starting at the same time added it first.
        if (!/exist|conflicts/i.test((err as Error).message)) throw err;
      }
    }
    await createTermsIndex(ctx, t);
  }
  return pending;
}

/** Waits (up to 30 s) for the table another process is creating; creates it if that process died. */
async function awaitTableSchema(ctx: Ctx, ks: KeyspaceInfo, t: StoredTable): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (await cqlTableExists(ctx, physicalKeyspace(ctx, t.keyspace), t.name)) {
      const idx = await ctx.session.execute('read', 'SELECT index_name FROM system_schema.indexes WHERE keyspace_name = ? AND table_name = ?', [physicalKeyspace(ctx, t.keyspace), t.name]);
      if (idx.rowLength >= (t.expiryCounts ? 3 : 2)) return;
    }
    // A claim older than a few seconds whose schema is still missing belongs to a process that died.
    if (Date.now() - Date.parse(t.createdAt) > 10_000) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  await createTableSchema(ctx, ks, t);
}

/** Tables with their row counts (counts.ts: a counter read per table; a key scan for tables not counted). */
export async function listTables(ctx: Ctx, keyspace: string): Promise<TableStats[]> {
  if ((await getKeyspace(ctx, keyspace)) === null) throw new ServiceError('keyspace_not_found', `Keyspace "${keyspace}" does not exist.`);
  const tables: StoredTable[] = [];
  for await (const page of ctx.session.pages(
    `SELECT ${TABLE_COLS} FROM ${sysTable(ctx, 'tables')} WHERE keyspace_name = ?`,
    [keyspace],
  )) {
    for (const r of page) tables.push(storedFromRow(r));
  }
  const out: TableStats[] = [];
  for (const t of tables) out.push({ ...publicTable(t), rowCount: await rowCount(ctx, t) });
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
