/**
 * `vss search`: its options, the request they make (POST /v1/search/) and the readable table of
 * the answer, with the semantic and lexical scores of each match when the answer has them.
 */
import { type Command, Option } from 'commander';
import { UsageError } from './errors.ts';
import { jsonObject, positiveInteger, unitInterval } from './options.ts';

export interface SearchOptions {
  keyspace: string;
  table: string;
  top: number;
  filter?: Record<string, unknown>;
  mode?: 'semantic' | 'lexical' | 'hybrid';
  fusion?: 'rrf' | 'relative';
  k?: number;
  alpha?: number;
  mmr?: number;
  mmrCandidates?: number;
  rerank?: boolean;
  candidates?: number;
  ef?: number;
}

export function addSearchOptions(c: Command): Command {
  return c
    .option('-n, --top <n>', 'matches to show', positiveInteger, 5)
    .option('--filter <json>', 'metadata filter as JSON', jsonObject)
    .addOption(new Option('--mode <mode>', 'by meaning, by words (BM25), or both fused (server default: semantic)').choices(['semantic', 'lexical', 'hybrid']))
    .addOption(new Option('--fusion <method>', 'hybrid: reciprocal rank fusion (--k, else the server\'s default) or normalised scores (--alpha, else the server\'s default)').choices(['rrf', 'relative']))
    .option('--k <n>', 'hybrid, rrf: the rank constant in 1/(k + rank)', positiveInteger)
    .option('--alpha <x>', "hybrid, relative: the semantic side's weight, 0 to 1", unitInterval)
    .option('--mmr <diversity>', 'maximal marginal relevance: 0 = relevance order, 1 = most diverse', unitInterval)
    .option('--mmr-candidates <n>', 'with --mmr: how many candidates it picks from', positiveInteger)
    .option('--rerank', "reorder the candidates with the server's reranker")
    .option('--candidates <n>', 'how many rows stage 1 retrieves before refining (initial_top_k; server default 1,000,000)', positiveInteger)
    .option('--ef <n>', 'how wide each graph walk of stage 1 is (higher: better recall, slower; server default 128)', positiveInteger);
}

/** The body of POST /v1/search/. Throws UsageError for options that do not go together. */
export function searchRequest(text: string, o: SearchOptions): Record<string, unknown> {
  if (o.mmr === undefined && o.mmrCandidates !== undefined) usage('--mmr-candidates needs --mmr');
  return {
    query: text,
    keyspace: o.keyspace,
    table: o.table,
    final_top_k: o.top,
    ...(o.candidates !== undefined ? { initial_top_k: o.candidates } : {}),
    ...(o.ef !== undefined ? { ef: o.ef } : {}),
    ...(o.filter ? { filter: o.filter } : {}),
    ...(o.mode ? { mode: o.mode } : {}),
    ...fusionOf(o),
    ...(o.mmr !== undefined ? { mmr: { diversity: o.mmr, ...(o.mmrCandidates !== undefined ? { candidates: o.mmrCandidates } : {}) } } : {}),
    ...(o.rerank ? { rerank: true } : {}),
  };
}

function fusionOf(o: SearchOptions): { fusion?: { method: 'rrf'; k?: number } | { method: 'relative'; alpha?: number } } {
  const named = o.fusion !== undefined ? `--fusion ${o.fusion}` : o.k !== undefined ? '--k' : o.alpha !== undefined ? '--alpha' : null;
  if (named === null) return {};
  if (o.mode !== 'hybrid') usage(`${named} applies to --mode hybrid only`);
  if (o.k !== undefined && o.alpha !== undefined) usage('--k is for --fusion rrf and --alpha for --fusion relative: give one');
  const method = o.fusion ?? (o.k !== undefined ? 'rrf' : 'relative');
  if (method === 'rrf' && o.alpha !== undefined) usage('--alpha is for --fusion relative');
  if (method === 'relative' && o.k !== undefined) usage('--k is for --fusion rrf');
  // Only what was given: the server fills in its defaults (k, alpha), so they are said once.
  return { fusion: method === 'rrf' ? { method, ...(o.k !== undefined ? { k: o.k } : {}) } : { method, ...(o.alpha !== undefined ? { alpha: o.alpha } : {}) } };
}

function usage(message: string): never {
  throw new UsageError(message);
}

interface Match {
  key: string;
  score: number;
  metadata?: Record<string, unknown>;
  scores?: { semantic: number | null; lexical: number | null };
}

/** Rank, score, (semantic and lexical when given), key and text, one line a match, cut to `columns`. */
export function searchTable(matches: readonly Match[], columns: number): string {
  if (matches.length === 0) return '(no matches)';
  const perList = matches.some((m) => m.scores !== undefined);
  const score = (x: number | null | undefined) => (typeof x === 'number' ? x.toFixed(4) : '—').padStart(8);
  const lists = (m: Match) => (perList ? `${score(m.scores?.semantic)}  ${score(m.scores?.lexical)}  ` : '');
  const width = Math.max(40, columns - (perList ? 60 : 40));
  const head = `${'#'.padStart(3)}  ${'score'.padStart(8)}  ${perList ? `${'semantic'.padStart(8)}  ${'lexical'.padStart(8)}  ` : ''}${'key'.padEnd(24)}  text`;
  return [head]
    .concat(
      matches.map((m, i) => {
        const text = String(m.metadata?.text ?? JSON.stringify(m.metadata ?? {})).replace(/\s+/g, ' ');
        return `${String(i + 1).padStart(3)}  ${score(m.score)}  ${lists(m)}${truncate(m.key, 24).padEnd(24)}  ${truncate(text, width)}`;
      }),
    )
    .join('\n');
}

const truncate = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
