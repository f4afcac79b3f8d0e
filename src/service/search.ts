import { invalidFields, ServiceError, type CodedFieldError } from '../errors.ts';
import { validateFilter } from '../index/filter.ts';
import type { Metric } from '../index/metric.ts';
import type { Filter, Metadata, StoredMatch } from '../storage/api.ts';
import type { Deps } from './deps.ts';
import { enrichWithSources } from './sources.ts';
import { requireTable } from './tables.ts';
import { checkMetricName, checkModelName, isZero, utf8Bytes, validNames, vectorOf } from './validate.ts';

export interface SearchInput {
  query?: string;
  vector?: number[];
  /** The query vector's little-endian float32 bytes in standard base64 (instead of `vector`). */
  vector_base64?: string;
  model_name?: string;
  keyspace: string;
  table: string;
  metric?: string;
  initial_top_k?: number;
  final_top_k?: number;
  filter?: Filter;
  include_vector?: boolean;
}

export interface SearchMatch {
  key: string;
  score: number;
  metadata: Metadata;
  vector?: number[];
}

export interface SearchOutput {
  query: string | null;
  model_name: string;
  keyspace: string;
  table: string;
  metric: Metric;
  initial_top_k: number;
  final_top_k: number;
  include_vector: boolean;
  filter?: Filter;
  matches: SearchMatch[];
}

export const DEFAULT_INITIAL_TOP_K = 1_000_000;
export const DEFAULT_FINAL_TOP_K = 5;

/** Resolves defaults and checks everything that can be checked before touching storage. */
function resolve(deps: Deps, input: SearchInput) {
  const { limits, defaultModel } = deps.config;
  const errors: CodedFieldError[] = [];
  const hasQuery = input.query !== undefined;
  const hasVector = input.vector !== undefined || input.vector_base64 !== undefined;
  if (hasQuery === hasVector) {
    const message = hasQuery ? 'give either query or a vector, not both' : 'one of query, vector or vector_base64 is required';
    const given = hasQuery ? (['vector', 'vector_base64'] as const).filter((f) => input[f] !== undefined) : (['vector'] as const);
    errors.push({ path: '/body/query', message }, ...given.map((f) => ({ path: `/body/${f}`, message })));
  }
  if (hasQuery && utf8Bytes(input.query!) > limits.queryBytes) {
    errors.push({ path: '/body/query', message: `must be at most ${limits.queryBytes} bytes in UTF-8` });
  }
  const { vector, field } = vectorOf(input, '/body', errors, limits);

  const metric = checkMetricName(input.metric ?? 'cosine', '/body/metric', errors);
  // Named models must exist whether or not this search embeds anything.
  checkModelName(deps.models, input.model_name, '/body/model_name', errors);
  const initialTopK = input.initial_top_k ?? DEFAULT_INITIAL_TOP_K;
  const finalTopK = input.final_top_k ?? DEFAULT_FINAL_TOP_K;
  if (finalTopK > initialTopK) {
    errors.push({ path: '/body/final_top_k', message: `must not exceed initial_top_k (${initialTopK})` });
  }
  if (input.filter !== undefined) errors.push(...validateFilter(input.filter, '/body/filter'));
  if (vector && metric === 'cosine' && isZero(vector)) errors.push({ path: `/body/${field}`, message: 'a zero vector has no cosine similarity' });
  if (errors.length > 0 || metric === null) {
    throw invalidFields(errors, validNames(deps.models));
  }

  const modelName = input.model_name ?? defaultModel;
  const embedder = hasQuery ? deps.models.get(modelName, '/body/model_name') : null;
  return { metric, initialTopK, finalTopK, modelName, vector, field, embedder };
}

export async function search(deps: Deps, input: SearchInput): Promise<SearchOutput> {
  const r = resolve(deps, input);
  const table = await requireTable(deps.storage, input.keyspace, input.table);

  // The model's dimension is known before it runs: a table of another one costs no model call.
  const dimension = r.vector?.length ?? r.embedder!.dimension;
  if (dimension !== table.dimension) {
    throw new ServiceError(
      'dimension_mismatch',
      `The query vector has ${dimension} dimensions; table "${table.name}" holds ${table.dimension}.`,
      { errors: [{ path: r.vector ? `/body/${r.field}` : '/body/model_name', message: `gives ${dimension} dimensions, table has ${table.dimension}` }] },
    );
  }
  // A text query's vector is passed while the model computes it, with a draft storage may start
  // its graph walks from meanwhile (SearchQuery.draft); the scores are the exact vector's.
  const vector = r.embedder ? r.embedder.embed([input.query!]).then((v) => v[0]) : r.vector!;
  // Storage may fail before it awaits the vector; a failed model call then has no other listener.
  if (vector instanceof Promise) vector.catch(() => undefined);
  const found = await deps.storage.search(input.keyspace, input.table, {
    vector,
    draft: r.embedder?.draftFor(input.query!) ?? undefined,
    metric: r.metric,
    candidates: r.initialTopK,
    limit: r.finalTopK,
    filter: input.filter,
    includeVector: input.include_vector === true,
  });
  const matches = await enrichWithSources(deps.storage, input.keyspace, input.table, found);
  return {
    query: input.query ?? null,
    model_name: r.modelName,
    keyspace: input.keyspace,
    table: input.table,
    metric: r.metric,
    initial_top_k: r.initialTopK,
    final_top_k: r.finalTopK,
    include_vector: input.include_vector === true,
    ...(input.filter !== undefined ? { filter: input.filter } : {}),
    matches: matches.map((m) => toMatch(m, input.include_vector === true)),
  };
}

function toMatch(m: StoredMatch & { metadata: Metadata }, includeVector: boolean): SearchMatch {
  const out: SearchMatch = { key: m.key, score: m.score, metadata: m.metadata };
  if (includeVector && m.vector) out.vector = Array.from(m.vector);
  return out;
}
