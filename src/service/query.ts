/**
 * `POST /v1/query/`: one query text searched over every table of one keyspace (a "container"),
 * hybrid (the model's cosine and BM25 over the rows' text, fused), the matches of all tables merged
 * by score. The text is embedded once; tables of another dimension than the model's cannot be
 * searched with it and are reported in `skipped_tables`.
 */
import { invalid, type FieldError } from '../errors.ts';
import type { Metadata } from '../storage/api.ts';
import { requireKeyspace, type Caller } from './caller.ts';
import type { Deps } from './deps.ts';
import { DEFAULT_FUSION } from './fusion.ts';
import { retrieve, type RetrievedMatch } from './retrieve.ts';
import { DEFAULT_FINAL_TOP_K, DEFAULT_INITIAL_TOP_K } from './search.ts';
import { enrichWithSources } from './sources.ts';
import { utf8Bytes } from './validate.ts';

export interface QueryInput {
  query: string;
  selectedContainerId?: string;
  final_top_k?: number;
  model_name?: string;
}

export interface QueryMatch {
  keyspace: string;
  table: string;
  key: string;
  /** The fused score; the cosine where no row of the table matched the words. */
  score: number;
  scores: { semantic: number | null; lexical: number | null };
  metadata: Metadata;
}

export interface SkippedTable {
  table: string;
  dimension: number;
  reason: string;
}

export interface QueryOutput {
  query: string;
  /** The keyspace searched: the one selected, or the default keyspace. */
  selectedContainerId: string;
  model_name: string;
  final_top_k: number;
  matches: QueryMatch[];
  skipped_tables: SkippedTable[];
}

/** Searches every table of `keyspace` whose dimension fits `vector`, hybrid with `text`; best first, at most `limit`. */
export async function searchKeyspace(
  deps: Deps,
  keyspace: string,
  vector: Float32Array,
  text: string,
  limit: number,
): Promise<{ matches: (QueryMatch & { text: string | null })[]; skipped: SkippedTable[] }> {
  const tables = await deps.storage.listTables(keyspace);
  const skipped: SkippedTable[] = [];
  const searchable = tables.filter((t) => {
    if (t.dimension === vector.length) return true;
    skipped.push({ table: t.name, dimension: t.dimension, reason: `holds ${t.dimension}-dimensional vectors; the query has ${vector.length}` });
    return false;
  });
  const perTable = await Promise.all(
    searchable.map(async (t) => {
      if (t.rowCount === 0) return [];
      const { matches } = await retrieve(deps.storage, {
        keyspace,
        table: t.name,
        mode: 'hybrid',
        vector,
        text,
        metric: 'cosine',
        candidates: Math.max(DEFAULT_INITIAL_TOP_K, limit),
        limit,
        includeVector: false,
        fusion: DEFAULT_FUSION,
      });
      // A table whose rows have no text (or none with these words) ranks as semantic search does, and says so with the cosine.
      const lexicalHit = matches.some((m) => m.scores!.lexical !== null);
      const enriched = await enrichWithSources(deps.storage, keyspace, t.name, matches);
      return enriched.map((m: RetrievedMatch) => ({
        keyspace,
        table: t.name,
        key: m.key,
        score: lexicalHit ? m.score : m.scores!.semantic!,
        scores: { semantic: m.scores!.semantic, lexical: m.scores!.lexical },
        metadata: m.metadata,
        text: m.text,
      }));
    }),
  );
  // Ties keep table order, then each table's own order: the merge is deterministic.
  const matches = perTable.flat().sort((a, b) => b.score - a.score).slice(0, limit);
  return { matches, skipped };
}

export async function query(deps: Deps, caller: Caller, input: QueryInput): Promise<QueryOutput> {
  const errors: FieldError[] = [];
  if (input.query.trim() === '') errors.push({ path: '/body/query', message: 'must not be empty' });
  if (utf8Bytes(input.query) > deps.config.limits.queryBytes) {
    errors.push({ path: '/body/query', message: `must be at most ${deps.config.limits.queryBytes} bytes in UTF-8` });
  }
  if (errors.length > 0) throw invalid(errors);

  const keyspace = input.selectedContainerId ?? deps.config.defaultKeyspace;
  const modelName = input.model_name ?? deps.config.defaultModel;
  const finalTopK = input.final_top_k ?? DEFAULT_FINAL_TOP_K;
  // Resolving the model first names a bad model_name before anything else happens.
  const embedder = deps.models.get(modelName, '/body/model_name');
  await requireKeyspace(deps.storage, caller, keyspace);

  const [vector] = await embedder.embed([input.query]);
  const { matches, skipped } = await searchKeyspace(deps, keyspace, vector, input.query, finalTopK);
  return {
    query: input.query,
    selectedContainerId: keyspace,
    model_name: modelName,
    final_top_k: finalTopK,
    matches: matches.map(({ text: _text, ...m }) => m),
    skipped_tables: skipped,
  };
}
