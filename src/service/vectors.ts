import { randomUUID } from 'node:crypto';
import { invalid, ServiceError, type FieldError } from '../errors.ts';
import { validateFilter } from '../index/filter.ts';
import type { Filter, Metadata, TableInfo, VectorRow } from '../storage/api.ts';
import type { Deps } from './deps.ts';
import { checkVectorQuota } from './quota.ts';
import { requireKeyspaceExists, requireTable } from './tables.ts';
import { checkKey, checkMetadata, checkText, isZero, vectorOf, type VectorField } from './validate.ts';

export interface VectorRecordInput {
  key?: string;
  vector?: number[];
  /** The vector's little-endian float32 bytes in standard base64 (instead of `vector`). */
  vector_base64?: string;
  text?: string;
  metadata?: Metadata;
}

export interface BatchInput {
  keyspace: string;
  table: string;
  model_name?: string;
  vectors?: VectorRecordInput[];
  /** The specification's form: bare vectors, keys made by the server. */
  vector?: number[][];
}

export interface WriteInput extends VectorRecordInput {
  keyspace: string;
  table: string;
  model_name?: string;
}

interface Parsed {
  key: string;
  vector: Float32Array | null;
  /** Where the vector came from, for error paths (null: embedded from text). */
  field: VectorField | null;
  text: string | null;
  metadata: Metadata;
  path: string;
}

/**
 * Validates every record (naming each bad one by index), embeds those given as text, makes the
 * table on a first write, and upserts all rows in one transaction: all or nothing.
 */
async function writeRecords(deps: Deps, keyspace: string, tableName: string, modelName: string | undefined, records: VectorRecordInput[], basePath: string): Promise<string[]> {
  const { limits } = deps.config;
  const errors: FieldError[] = [];
  if (records.length === 0) errors.push({ path: basePath, message: 'must hold at least one vector' });
  if (records.length > limits.batchItems) errors.push({ path: basePath, message: `must hold at most ${limits.batchItems} items (has ${records.length})` });
  if (errors.length) throw invalid(errors);

  const parsed: Parsed[] = records.map((r, i) => {
    const path = records.length === 1 && basePath === '/body' ? '/body' : `${basePath}/${i}`;
    const key = r.key ?? randomUUID();
    checkKey(key, `${path}/key`, errors, limits);
    checkMetadata(r.metadata, `${path}/metadata`, errors, limits);
    checkText(r.text, `${path}/text`, errors, limits.textBytes);
    const { vector, field } = vectorOf(r, path, errors, limits);
    if (field === null && r.text === undefined) errors.push({ path, message: 'needs a vector (or vector_base64), or a text to embed' });
    return { key, vector, field, text: r.text ?? null, metadata: r.metadata ?? {}, path };
  });
  if (errors.length) throw invalid(errors);

  const ks = await requireKeyspaceExists(deps.storage, keyspace);
  await checkVectorQuota(deps, ks.owner, parsed.length);
  const existing = await deps.storage.getTable(keyspace, tableName);
  const needsEmbedding = parsed.some((p) => p.vector === null);
  const model = modelName ?? existing?.model ?? deps.config.defaultModel;
  const embedder = needsEmbedding ? deps.models.get(model) : null;
  const dimension = existing?.dimension ?? parsed.find((p) => p.vector)?.vector!.length ?? deps.models.dimension(model);
  const metric = existing?.metric ?? 'cosine';

  for (const p of parsed) {
    if (p.vector && p.vector.length !== dimension) {
      errors.push({ path: `${p.path}/${p.field}`, message: `has ${p.vector.length} dimensions; table "${tableName}" holds ${dimension}` });
    } else if (p.vector && metric === 'cosine' && isZero(p.vector)) {
      errors.push({ path: `${p.path}/${p.field}`, message: 'a zero vector has no cosine similarity' });
    }
  }
  if (embedder && deps.models.dimension(model) !== dimension) {
    errors.push({ path: `${basePath === '/body' ? '/body' : basePath}/model_name`, message: `model "${model}" gives ${deps.models.dimension(model)} dimensions; table holds ${dimension}` });
  }
  if (errors.length) throw new ServiceError('dimension_mismatch', errors.map((e) => `${e.path}: ${e.message}`).join('; '), { errors });

  const toEmbed = parsed.filter((p) => p.vector === null);
  if (toEmbed.length > 0) {
    const vectors = await embedder!.embed(toEmbed.map((p) => p.text!));
    toEmbed.forEach((p, i) => (p.vector = vectors[i]));
  }

  let table: TableInfo | null = existing;
  table ??= await deps.storage.createTable(
    { keyspace, name: tableName, dimension, metric: 'cosine', model: needsEmbedding ? model : null },
    { ifNotExists: true },
  );
  if (table.dimension !== dimension) {
    // Another writer made the table first with another dimension.
    throw new ServiceError('dimension_mismatch', `Table "${tableName}" holds ${table.dimension} dimensions; these vectors have ${dimension}.`);
  }
  const rows: VectorRow[] = parsed.map((p) => ({ key: p.key, vector: p.vector!, metadata: p.metadata, text: p.text }));
  await deps.storage.upsertVectors(keyspace, tableName, rows);
  return parsed.map((p) => p.key);
}

export async function writeVector(deps: Deps, input: WriteInput) {
  const { keyspace, table, model_name, ...record } = input;
  const [key] = await writeRecords(deps, keyspace, table, model_name, [record], '/body');
  return { keyspace, table, key };
}

export async function writeBatch(deps: Deps, input: BatchInput) {
  if ((input.vectors === undefined) === (input.vector === undefined)) {
    const message = input.vectors === undefined ? 'one of vectors or vector is required' : 'give either vectors or vector, not both';
    throw invalid([{ path: '/body/vectors', message }, { path: '/body/vector', message }]);
  }
  const records = input.vectors ?? input.vector!.map((vector) => ({ vector }));
  const keys = await writeRecords(deps, input.keyspace, input.table, input.model_name, records, input.vectors ? '/body/vectors' : '/body/vector');
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
      ...(input.include_vector === false ? {} : { vector: Array.from(r.vector) }),
    })),
    cursor: page.cursor,
  };
}
