import { randomUUID } from 'node:crypto';
import { invalid, invalidFields, ServiceError, type CodedFieldError } from '../errors.ts';
import { validateFilter } from '../index/filter.ts';
import type { Filter, Metadata, TableInfo, VectorRow } from '../storage/api.ts';
import type { Limits } from '../config/config.ts';
import type { Deps } from './deps.ts';
import { forOwner } from './owner-lock.ts';
import { checkDimension, dimensionError, dimensionExtra, dimensionMismatch } from '../storage/vector-dimension.ts';
import { checkTableQuota, checkVectorQuota, limitsVectors } from './quota.ts';
import { requireKeyspaceExists, requireTable } from './tables.ts';
import { checkTtl, clockOf, effectiveTtl, expiresAtIso, expiryAt } from './ttl.ts';
import { checkKey, checkMetadata, checkModelName, checkText, isZero, toFloat32, validNames, vectorOf } from './validate.ts';

export interface VectorRecordInput {
  key?: string;
  vector?: number[];
  /** The vector's little-endian float32 bytes in standard base64 (instead of `vector`). */
  vector_base64?: string;
  text?: string;
  metadata?: Metadata;
  /** Seconds until the row expires; null: never (whatever the table's default); absent: the request's or the table's. */
  ttl_seconds?: number | null;
}

export interface BatchInput {
  keyspace: string;
  table: string;
  model_name?: string;
  vectors?: VectorRecordInput[];
  /** The specification's form: bare vectors, keys made by the server. */
  vector?: number[][];
  /** The TTL of the records that name none (see VectorRecordInput.ttl_seconds). */
  ttl_seconds?: number | null;
}

export interface WriteInput extends VectorRecordInput {
  keyspace: string;
  table: string;
  model_name?: string;
}

interface Parsed {
  key: string;
  vector: Float32Array | null;
  /** Where the vector is in the request, for error paths; null when it is embedded from text. */
  vectorPath: string | null;
  text: string | null;
  metadata: Metadata;
  /** The record's own TTL (undefined: it names none). */
  ttl: number | null | undefined;
}

/**
 * How the records came: one record as the body, a `vectors` array of records, or the
 * specification's bare `vector` array of number arrays (keys made by the server).
 */
type RecordsForm = 'single' | 'records' | 'bare';

/**
 * Validates every record, embeds those given as text, makes the table on a first write, and
 * upserts all rows in one transaction: all or nothing. One answer names every bad record: the
 * checks that need the table (dimension, zero vectors) run even when others have failed.
 */
async function writeRecords(
  deps: Deps,
  keyspace: string,
  tableName: string,
  modelName: string | undefined,
  records: VectorRecordInput[],
  basePath: string,
  form: RecordsForm,
  requestTtl?: number | null,
): Promise<string[]> {
  const { limits } = deps.config;
  const errors: CodedFieldError[] = [];
  checkTtl(requestTtl, '/body/ttl_seconds', errors);
  if (records.length === 0) errors.push({ path: basePath, message: 'must hold at least one vector' });
  if (records.length > limits.batchItems) errors.push({ path: basePath, message: `must hold at most ${limits.batchItems} items (has ${records.length})` });
  if (errors.length) throw invalid(errors);
  // A named model must exist even when every record brings its vector.
  const modelKnown = checkModelName(deps.models, modelName, '/body/model_name', errors);
  const parsed = records.map((r, i) => parseRecord(r, form === 'single' ? '/body' : `${basePath}/${i}`, form === 'bare', errors, limits));
  const firstBad: { actual?: number } = {};
  const refuse = (expected: number | null) =>
    invalidFields(errors, { ...validNames(deps.models), ...(expected !== null && firstBad.actual !== undefined ? { dimension_mismatch: dimensionExtra(expected, firstBad.actual) } : {}) });

  let ks;
  try {
    ks = await requireKeyspaceExists(deps.storage, keyspace);
  } catch (e) {
    throw errors.length ? refuse(null) : e;
  }
  const existing = await deps.storage.getTable(keyspace, tableName);
  const toEmbed = parsed.filter((p) => p.vectorPath === null);
  const model = modelName ?? existing?.model ?? deps.config.defaultModel;
  const dimension = existing?.dimension ?? parsed.find((p) => p.vector)?.vector!.length ?? (modelKnown ? deps.models.dimension(model) : null);
  if (dimension !== null) {
    checkAgainstTable(parsed, dimension, existing?.metric ?? 'cosine', errors, firstBad);
    if (modelKnown && toEmbed.length > 0) checkDimension({ length: deps.models.dimension(model) }, dimension, '/body/model_name', errors, firstBad);
  }
  if (errors.length || dimension === null) throw refuse(dimension);

  const embedder = toEmbed.length > 0 ? deps.models.get(model, '/body/model_name') : null;
  const checkLimits = async (table: TableInfo | null): Promise<void> => {
    await checkVectorQuota(deps, ks.owner, parsed.length, () => countNewKeys(deps, table, parsed));
    if (table === null) await checkTableQuota(deps, keyspace);
  };
  await checkLimits(existing); // before the embedding it would waste
  if (embedder) {
    const vectors = await embedder.embed(toEmbed.map((p) => p.text!), { bulk: true });
    toEmbed.forEach((p, i) => (p.vector = vectors[i]));
  }

  const write = async (): Promise<void> => {
    // Again, now that nothing else of this owner's is being written (see owner-lock.ts); a
    // keyspace without an owner has no quota to check.
    let table = ks.owner === null ? existing : await deps.storage.getTable(keyspace, tableName);
    if (ks.owner !== null) await checkLimits(table);
    table ??= await deps.storage.createTable(
      { keyspace, name: tableName, dimension, metric: 'cosine', model: embedder ? model : null },
      { ifNotExists: true },
    );
    if (table.dimension !== dimension) {
      // Another writer made the table first with another dimension: every vector is of this one.
      const paths = [...new Set(parsed.map((p) => p.vectorPath ?? '/body/model_name'))];
      throw dimensionMismatch(paths.map((path) => dimensionError(path, dimension, table.dimension)), table.dimension, dimension);
    }
    // The table's default matters only to records the write gives no TTL.
    const needsDefault = requestTtl === undefined && parsed.some((p) => p.ttl === undefined);
    const tableTtl = needsDefault ? await deps.storage.getDefaultTtl(keyspace, tableName) : null;
    const now = clockOf(deps)();
    const rows: VectorRow[] = parsed.map((p) => ({
      key: p.key,
      vector: p.vector!,
      metadata: p.metadata,
      text: p.text,
      expiresAt: expiryAt(now, effectiveTtl(p.ttl, requestTtl, tableTtl)),
    }));
    await deps.storage.upsertVectors(keyspace, tableName, rows);
  };
  // One owner's writes take turns only where a check could let two of them overrun a quota: a
  // write to an existing table of an owner whose plan does not limit vectors checks nothing.
  if (existing !== null && !(await limitsVectors(deps, ks.owner))) await write();
  else await forOwner(deps.storage, ks.owner, write);
  return parsed.map((p) => p.key);
}

/** One record's own checks (key, metadata, text, vector); `bare`: the record is a number array at `path`. */
function parseRecord(r: VectorRecordInput, path: string, bare: boolean, errors: CodedFieldError[], limits: Limits): Parsed {
  const key = r.key ?? randomUUID();
  checkKey(key, `${path}/key`, errors, limits);
  checkMetadata(r.metadata, `${path}/metadata`, errors, limits);
  checkText(r.text, `${path}/text`, errors, limits.textBytes);
  if (bare) return { key, vector: toFloat32(r.vector!, path, errors, limits), vectorPath: path, text: null, metadata: {}, ttl: undefined };
  checkTtl(r.ttl_seconds, `${path}/ttl_seconds`, errors);
  const given = vectorOf(r, path, errors, limits);
  if (given.field === null && r.text === undefined) errors.push({ path, message: 'needs a vector (or vector_base64), or a text to embed' });
  return { key, vector: given.vector, vectorPath: given.field && `${path}/${given.field}`, text: r.text ?? null, metadata: r.metadata ?? {}, ttl: r.ttl_seconds };
}

/** The checks that need the table: each given vector's dimension, and no zero vector under cosine. */
function checkAgainstTable(parsed: Parsed[], dimension: number, metric: string, errors: CodedFieldError[], firstBad: { actual?: number }): void {
  for (const p of parsed) {
    if (!p.vector) continue;
    if (!checkDimension(p.vector, dimension, p.vectorPath!, errors, firstBad)) continue;
    if (metric === 'cosine' && isZero(p.vector)) {
      errors.push({ path: p.vectorPath!, message: 'a zero vector has no cosine similarity' });
    }
  }
}

/** Rows a write would add: its distinct keys that the table does not hold yet (an upsert adds none). */
async function countNewKeys(deps: Deps, table: TableInfo | null, parsed: Parsed[]): Promise<number> {
  const keys = [...new Set(parsed.map((p) => p.key))];
  if (table === null) return keys.length;
  let added = 0;
  for (const key of keys) if ((await deps.storage.getVector(table.keyspace, table.name, key)) === null) added++;
  return added;
}

export async function writeVector(deps: Deps, input: WriteInput) {
  const { keyspace, table, model_name, ...record } = input;
  const [key] = await writeRecords(deps, keyspace, table, model_name, [record], '/body', 'single');
  return { keyspace, table, key };
}

export async function writeBatch(deps: Deps, input: BatchInput) {
  if ((input.vectors === undefined) === (input.vector === undefined)) {
    const message = input.vectors === undefined ? 'one of vectors or vector is required' : 'give either vectors or vector, not both';
    throw invalid([{ path: '/body/vectors', message }, { path: '/body/vector', message }]);
  }
  const records = input.vectors ?? input.vector!.map((vector) => ({ vector }));
  const keys = await writeRecords(deps, input.keyspace, input.table, input.model_name, records, input.vectors ? '/body/vectors' : '/body/vector', input.vectors ? 'records' : 'bare', input.ttl_seconds);
  return { keyspace: input.keyspace, table: input.table, written: keys.length, keys };
}

export async function getVector(deps: Deps, input: { keyspace: string; table: string; key: string; include_vector?: boolean }) {
  await requireTable(deps.storage, input.keyspace, input.table);
  const row = await deps.storage.getVector(input.keyspace, input.table, input.key);
  if (row === null) throw new ServiceError('vector_not_found', `No vector with key "${input.key}" in ${input.keyspace}.${input.table}.`);
  return {
    keyspace: input.keyspace,
    table: input.table,
    key: row.key,
    metadata: row.metadata,
    text: row.text,
    expires_at: expiresAtIso(row.expiresAt),
    ...(input.include_vector === false ? {} : { vector: Array.from(row.vector) }),
  };
}

export async function deleteVectors(deps: Deps, input: { keyspace: string; table: string; keys?: string[]; filter?: Filter }) {
  if ((input.keys === undefined) === (input.filter === undefined)) {
    const message = input.keys === undefined ? 'one of keys or filter is required' : 'give either keys or filter, not both';
    throw invalid([{ path: '/body/keys', message }, { path: '/body/filter', message }]);
  }
  if (input.filter !== undefined) {
    const errors = validateFilter(input.filter, '/body/filter');
    if (errors.length) throw invalid(errors);
  }
  await requireTable(deps.storage, input.keyspace, input.table);
  const deleted = input.keys !== undefined
    ? await deps.storage.deleteVectors(input.keyspace, input.table, input.keys)
    : await deps.storage.deleteByFilter(input.keyspace, input.table, input.filter!);
  return { keyspace: input.keyspace, table: input.table, deleted };
}

export async function countVectors(deps: Deps, input: { keyspace: string; table: string; filter?: Filter }) {
  if (input.filter !== undefined) {
    const errors = validateFilter(input.filter, '/body/filter');
    if (errors.length) throw invalid(errors);
  }
  await requireTable(deps.storage, input.keyspace, input.table);
  const count = await deps.storage.countVectors(input.keyspace, input.table, input.filter);
  return { keyspace: input.keyspace, table: input.table, count };
}

/** One page of a table's rows in key order, for export and browsing. */
export async function listVectors(deps: Deps, input: { keyspace: string; table: string; cursor?: string; limit?: number; include_vector?: boolean }) {
  await requireTable(deps.storage, input.keyspace, input.table);
  const page = await deps.storage.scanVectors(input.keyspace, input.table, { cursor: input.cursor ?? null, limit: input.limit ?? 100 });
  return {
    keyspace: input.keyspace,
    table: input.table,
    vectors: page.rows.map((r) => ({
      key: r.key,
      metadata: r.metadata,
      text: r.text,
      expires_at: expiresAtIso(r.expiresAt),
      ...(input.include_vector === false ? {} : { vector: Array.from(r.vector) }),
    })),
    cursor: page.cursor,
  };
}
