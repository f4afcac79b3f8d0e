/**
 * A client of a cross-encoder reranker behind the Cohere-compatible `/rerank` API (Cohere, Jina,
 * Voyage, Mixedbread and vLLM serve it): `{model, query, documents, top_n}` →
 * `{results: [{index, relevance_score}]}`. Search degrades to its own order when this fails, so
 * every failure is one RerankFailed with a reason that is safe to show in a note.
 */
import type { Config } from '../config/config.ts';
import { postJson } from './json-endpoint.ts';
import { LlmSlots } from './llm-slots.ts';

export interface RerankResult {
  /** Index into the documents sent. */
  index: number;
  relevanceScore: number;
}

export interface Reranker {
  /** The topN most relevant documents' indexes, most relevant first. Throws RerankFailed. */
  rerank(query: string, documents: string[], topN: number): Promise<RerankResult[]>;
}

export class RerankFailed extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RerankFailed';
  }
}

/** Longest answer read: some servers return each document's text with its score. */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
const NAME = 'the reranker';

/** A base (`…/v1`, to which `/rerank` is appended) or the full `/rerank` URL. */
export function rerankUrl(url: string): string {
  const u = new URL(url);
  if (!/\/rerank\/?$/.test(u.pathname)) u.pathname = `${u.pathname.replace(/\/+$/, '')}/rerank`;
  return u.toString();
}

/**
 * Null when no reranker is configured. At most `maxConcurrent` calls are with the endpoint at once
 * (a cross-encoder reads every document with the query, so one is slow); a call beyond them fails
 * at once rather than queue there. `log` hears each failure but the busy one (the key never).
 */
export function createReranker(config: Config['rerank'], log?: (msg: string, err?: unknown) => void): Reranker | null {
  if (config.url === undefined) return null;
  // Config checked it is an http(s) URL, so this cannot throw.
  const url = rerankUrl(config.url);
  const slots = new LlmSlots(config.maxConcurrent);
  return {
    async rerank(query, documents, topN) {
      if (documents.length === 0 || topN < 1) return [];
      const release = slots.tryClaim();
      if (!release) throw new RerankFailed(`${NAME} is busy (${slots.max} searches are with it)`);
      try {
        const body = await postJson({
          url,
          body: { ...(config.model !== undefined ? { model: config.model } : {}), query, documents, top_n: Math.min(topN, documents.length) },
          apiKey: config.apiKey,
          timeoutMs: config.timeoutMs,
          maxAnswerBytes: MAX_ANSWER_BYTES,
          name: NAME,
          fail: (reason, cause) => new RerankFailed(reason, { cause }),
        });
        return resultsOf(body, documents.length, topN);
      } catch (e) {
        if (e instanceof RerankFailed) log?.(`reranking failed: ${e.message}`, e.cause);
        throw e;
      } finally {
        release();
      }
    },
  };
}

/** The answer's results, checked (each index once and in range, each score a finite number), best first, at most topN. */
function resultsOf(body: unknown, documentCount: number, topN: number): RerankResult[] {
  const results = (body as { results?: unknown } | null)?.results;
  if (!Array.isArray(results)) throw new RerankFailed(`${NAME} answered without a results list`);
  const seen = new Set<number>();
  const out = results.map((r: unknown, i): RerankResult => {
    const { index, relevance_score: score } = (r ?? {}) as { index?: unknown; relevance_score?: unknown };
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= documentCount || seen.has(index)) {
      throw new RerankFailed(`${NAME}'s results[${i}].index is not one of the ${documentCount} documents' (or repeats one)`);
    }
    if (typeof score !== 'number' || !Number.isFinite(score)) throw new RerankFailed(`${NAME}'s results[${i}].relevance_score is not a finite number`);
    seen.add(index);
    return { index, relevanceScore: score };
  });
  // The API lists results best first; sorting (stably) keeps a server that does not from misordering the page.
  return out.sort((a, b) => b.relevanceScore - a.relevanceScore).slice(0, topN);
}
