import { invalidFields, type CodedFieldError } from '../errors.ts';
import { validateFilter } from '../index/filter.ts';
import { MAX_SEARCH_EFFORT } from '../index/ann-segments.ts';
import type { Metric } from '../index/metric.ts';
import type { Filter, Metadata, StoredMatch } from '../storage/api.ts';
import { dimensionError, dimensionMismatch } from '../storage/vector-dimension.ts';
import type { Deps } from './deps.ts';
import { DEFAULT_ALPHA, DEFAULT_FUSION, DEFAULT_RRF_K, type Fusion } from './fusion.ts';
import { MAX_LIST_ROWS, MAX_RERANK_DOCUMENTS, retrieve, SEARCH_MODES, type RetrievedMatch, type SearchMode } from './retrieve.ts';
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
  /** Graph search effort (see SearchQuery.ef); the backend's default when absent. */
  ef?: number;
  filter?: Filter;
  include_vector?: boolean;
  /** semantic (default), lexical (BM25 over the rows' text) or hybrid (both lists fused). */
  mode?: string;
  fusion?: { method?: string; k?: number; alpha?: number };
  mmr?: { diversity?: number; candidates?: number };
  rerank?: boolean;
}

export interface SearchMatch {
  key: string;
  score: number;
  /** Each list's own score (lexical and hybrid modes, or with mmr/rerank). */
  scores?: RetrievedMatch['scores'];
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
  mode: SearchMode;
  /** The fusion used (hybrid mode). */
  fusion?: Fusion;
  matches: SearchMatch[];
  /** Why the answer is less than was asked for (a reranker that failed: un-reranked order). */
  note?: string;
}

/** Default MMR candidates: enough for diversity to choose from, never more than initial_top_k. */
const DEFAULT_MMR_CANDIDATES = 100;

export const DEFAULT_INITIAL_TOP_K = 1_000_000;
export const DEFAULT_FINAL_TOP_K = 5;

/** Resolves defaults and checks everything that can be checked before touching storage. */
function resolve(deps: Deps, input: SearchInput) {
  const { limits, defaultModel } = deps.config;
  const errors: CodedFieldError[] = [];
  const hasQuery = input.query !== undefined;
  const hasVector = input.vector !== undefined || input.vector_base64 !== undefined;
  const mode = (input.mode ?? 'semantic') as SearchMode;
  if (!SEARCH_MODES.includes(mode)) errors.push({ path: '/body/mode', message: `must be one of ${SEARCH_MODES.join(', ')}` });
  if (mode !== 'semantic') {
    // The lexical side needs words; hybrid may take the semantic side's vector ready-made.
    if (!hasQuery) errors.push({ path: '/body/query', message: `${mode} search needs query text` });
    if (mode === 'lexical' && hasVector) {
      for (const f of ['vector', 'vector_base64'] as const) if (input[f] !== undefined) errors.push({ path: `/body/${f}`, message: 'lexical search takes no vector' });
    }
  } else if (hasQuery === hasVector) {
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
  if (input.ef !== undefined) {
    if (!(Number.isInteger(input.ef) && input.ef >= 1 && input.ef <= MAX_SEARCH_EFFORT)) errors.push({ path: '/body/ef', message: `must be an integer from 1 to ${MAX_SEARCH_EFFORT}` });
    else if (mode === 'lexical') errors.push({ path: '/body/ef', message: 'applies to semantic and hybrid search only' });
  }
  const fusion = checkFusion(input.fusion, mode, errors);
  const mmr = checkMmr(input.mmr, initialTopK, finalTopK, errors);
  if (input.rerank === true) {
    if (deps.reranker === null) errors.push({ path: '/body/rerank', message: 'no reranker is configured on this server (VSS_RERANK_URL)' });
    if (!hasQuery) errors.push({ path: '/body/rerank', message: 'reranking needs query text' });
    if (finalTopK > MAX_RERANK_DOCUMENTS) errors.push({ path: '/body/final_top_k', message: `must be at most ${MAX_RERANK_DOCUMENTS} with rerank` });
  }
  if (vector && metric === 'cosine' && isZero(vector)) errors.push({ path: `/body/${field}`, message: 'a zero vector has no cosine similarity' });
  if (errors.length > 0 || metric === null) {
    throw invalidFields(errors, validNames(deps.models));
  }

  const modelName = input.model_name ?? defaultModel;
  const embedder = hasQuery && !vector && mode !== 'lexical' ? deps.models.get(modelName, '/body/model_name') : null;
  return { metric, initialTopK, finalTopK, modelName, vector, field, embedder, mode, fusion, mmr, rerank: input.rerank === true ? deps.reranker : null };
}

function checkFusion(input: SearchInput['fusion'], mode: SearchMode, errors: CodedFieldError[]): Fusion {
  if (input === undefined) return DEFAULT_FUSION;
  if (mode !== 'hybrid') errors.push({ path: '/body/fusion', message: 'applies to hybrid mode only' });
  if (input.method === 'rrf') {
    const k = input.k ?? DEFAULT_RRF_K;
    if (!(Number.isFinite(k) && k >= 0)) errors.push({ path: '/body/fusion/k', message: 'must be a number >= 0' });
    if (input.alpha !== undefined) errors.push({ path: '/body/fusion/alpha', message: 'applies to method relative only' });
    return { method: 'rrf', k };
  }
  if (input.method === 'relative') {
    const alpha = input.alpha ?? DEFAULT_ALPHA;
    if (!(alpha >= 0 && alpha <= 1)) errors.push({ path: '/body/fusion/alpha', message: 'must be between 0 and 1' });
    if (input.k !== undefined) errors.push({ path: '/body/fusion/k', message: 'applies to method rrf only' });
    return { method: 'relative', alpha };
  }
  errors.push({ path: '/body/fusion/method', message: 'must be rrf or relative' });
  return DEFAULT_FUSION;
}

function checkMmr(input: SearchInput['mmr'], initialTopK: number, finalTopK: number, errors: CodedFieldError[]): { diversity: number; candidates: number } | undefined {
  if (input === undefined) return undefined;
  const diversity = input.diversity ?? 0.5;
  if (!(diversity >= 0 && diversity <= 1)) errors.push({ path: '/body/mmr/diversity', message: 'must be between 0 and 1' });
  const candidates = input.candidates ?? Math.min(initialTopK, Math.max(finalTopK, DEFAULT_MMR_CANDIDATES));
  if (!Number.isInteger(candidates) || candidates < finalTopK || candidates > Math.min(initialTopK, MAX_LIST_ROWS)) {
    errors.push({ path: '/body/mmr/candidates', message: `must be an integer from final_top_k (${finalTopK}) to ${Math.min(initialTopK, MAX_LIST_ROWS)} (initial_top_k, at most ${MAX_LIST_ROWS})` });
  }
  return { diversity, candidates };
}

export async function search(deps: Deps, input: SearchInput): Promise<SearchOutput> {
  const r = resolve(deps, input);
  const table = await requireTable(deps.storage, input.keyspace, input.table);

  // The model's dimension is known before it runs: a table of another one costs no model call.
  const dimension = r.vector?.length ?? r.embedder?.dimension ?? table.dimension;
  if (dimension !== table.dimension) {
    throw dimensionMismatch([dimensionError(r.vector ? `/body/${r.field}` : '/body/model_name', dimension, table.dimension)], table.dimension, dimension);
  }
  // A text query's vector is awaited in retrieve(), after a hybrid search's lexical list is asked for.
  const vector = r.embedder ? r.embedder.embed([input.query!]).then((v) => v[0]) : r.vector;
  const found = await retrieve(deps.storage, {
    keyspace: input.keyspace,
    table: input.table,
    mode: r.mode,
    vector,
    text: input.query ?? null,
    metric: r.metric,
    candidates: r.initialTopK,
    ef: input.ef,
    limit: r.finalTopK,
    filter: input.filter,
    includeVector: input.include_vector === true,
    fusion: r.fusion,
    mmr: r.mmr,
    reranker: r.rerank,
  });
  const matches = await enrichWithSources(deps.storage, input.keyspace, input.table, found.matches);
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
    mode: r.mode,
    ...(r.mode === 'hybrid' ? { fusion: r.fusion } : {}),
    matches: matches.map((m) => toMatch(m, input.include_vector === true)),
    ...(found.note !== undefined ? { note: found.note } : {}),
  };
}

function toMatch(m: RetrievedMatch & { metadata: Metadata }, includeVector: boolean): SearchMatch {
  const out: SearchMatch = { key: m.key, score: m.score, ...(m.scores ? { scores: m.scores } : {}), metadata: m.metadata };
  if (includeVector && m.vector) out.vector = Array.from(m.vector);
  return out;
}
