/**
 * The retrieval pipeline behind /v1/search/, /v1/query/ and chat: retrieve (the semantic list,
 * the lexical list, or both) → fuse → MMR → rerank → the first `limit`. Each stage runs only when
 * asked for; a plain semantic search is the one storage call it always was, scores unchanged.
 * Otherwise the lists come as storage's refs and scores, and only the rows the later stages use
 * are read, in one storage call as a rule (see RowReader).
 */
import type { Filter, Metric, ReadMatch, RowRef, ScoredRef, SearchQuery, Storage, StoredMatch } from '../storage/api.ts';
import { fuse, keylessTies, sortFused, type Fusion } from './fusion.ts';
import { mmr } from './mmr.ts';
import { RerankFailed, type Reranker } from './rerank.ts';

export type SearchMode = 'semantic' | 'lexical' | 'hybrid';
export const SEARCH_MODES: readonly SearchMode[] = ['semantic', 'lexical', 'hybrid'];

/** Each list of a hybrid search (and a lexical one) holds at most this many rows, whatever initial_top_k says. */
export const MAX_LIST_ROWS = 1000;
/** The reranker sees at most this many candidates (the top of initial_top_k). */
export const MAX_RERANK_DOCUMENTS = 100;

export interface Retrieval {
  keyspace: string;
  table: string;
  mode: SearchMode;
  /**
   * The semantic side's query vector (semantic and hybrid), or the model's promise of it: a
   * hybrid search's lexical list is asked for before it is awaited. Storage gets the vector.
   */
  vector: Float32Array | Promise<Float32Array> | null;
  /** The lexical side's words (lexical and hybrid), and what the reranker is asked. */
  text: string | null;
  metric: Metric;
  /** Candidates per list (initial_top_k). */
  candidates: number;
  /** Stage 1's graph effort (ef), where the backend has one. */
  ef?: number;
  /** Matches returned (final_top_k). */
  limit: number;
  filter?: Filter;
  includeVector: boolean;
  fusion: Fusion;
  mmr?: { diversity: number; candidates: number };
  /** Set when the caller asked for reranking (and one is configured). */
  reranker?: Reranker | null;
}

export interface RetrievedMatch extends StoredMatch {
  /** Each list's own score (cosine or the metric's, BM25), null where that list lacked the row; absent in plain semantic mode. */
  scores?: { semantic: number | null; lexical: number | null; rerank?: number };
}

export interface Retrieved {
  matches: RetrievedMatch[];
  /** Why the answer is not all that was asked for (a reranker that failed). */
  note?: string;
}

export async function retrieve(storage: Storage, r: Retrieval): Promise<Retrieved> {
  const { keyspace, table } = r;
  const plain = r.mode === 'semantic' && r.mmr === undefined && !r.reranker;
  if (plain) {
    const found = await storage.search(keyspace, table, await semanticQuery(r, r.limit, r.includeVector));
    return { matches: found };
  }
  // How many rows the later stages choose from.
  let pool = r.limit;
  if (r.mmr) pool = Math.max(pool, r.mmr.candidates);
  if (r.reranker) pool = Math.max(pool, Math.min(r.candidates, MAX_RERANK_DOCUMENTS));
  pool = Math.min(pool, r.candidates);
  const depth = r.mode === 'semantic' ? pool : Math.max(pool, Math.min(r.candidates, MAX_LIST_ROWS));

  // The lists as refs and scores: of up to 2 x 1,000 rows listed, only those kept are read (below).
  const rows = new RowReader(storage, r);
  let ranked: Ranked[];
  if (r.mode === 'semantic') {
    ranked = (await storage.searchRefs(keyspace, table, await semanticQuery(r, depth, false))).map((m) => ({ ref: m.ref, score: m.score, scores: { semantic: m.score, lexical: null } }));
  } else if (r.mode === 'lexical') {
    ranked = (await lexical(storage, r, depth)).map((m) => ({ ref: m.ref, score: m.score, scores: { semantic: null, lexical: m.score } }));
  } else {
    // The lexical list is asked for at once while the model embeds the query, else where the
    // semantic search leaves room for it (SearchQuery.startBeside), at the latest after it.
    let lexList: Promise<ScoredRef[]> | undefined;
    const askLexical = (): Promise<ScoredRef[]> => {
      if (lexList === undefined) {
        lexList = lexical(storage, r, depth);
        lexList.catch(() => undefined); // awaited below; meanwhile the other side's failure may come first
      }
      return lexList;
    };
    if (!(r.vector instanceof Float32Array)) void askLexical();
    const sem = await storage.searchRefs(keyspace, table, { ...(await semanticQuery(r, depth, false)), startBeside: () => void askLexical() });
    let fused = fuse(sem, await askLexical(), r.fusion);
    // Ties are broken by key: the tied rows no list gave a key for are read first (RRF ties often),
    // with the pool, which the later stages read anyway: still one read as a rule.
    const keyless = keylessTies(fused, pool);
    if (keyless.length > 0) {
      await rows.read([...fused.slice(0, pool), ...keyless].map((f) => f.ref));
      for (const f of keyless) if (rows.has(f.ref)) f.key = rows.get(f.ref).key;
      fused = sortFused(fused);
    }
    ranked = fused.map((f) => ({ ref: f.ref, score: f.score, scores: { semantic: f.semantic, lexical: f.lexical } }));
  }
  // The later stages choose from the pool; past it, the list only stands in for rows gone meanwhile.

  if (r.mmr) {
    // MMR compares the candidates' vectors: all of the pool is read (a row gone since drops out).
    ranked = ranked.slice(0, pool);
    await rows.read(ranked.map((m) => m.ref));
    ranked = ranked.filter((m) => rows.has(m.ref));
    // Relevance must grow with quality: a euclidean semantic list is best-first by lowest distance.
    const sign = r.mode === 'semantic' && r.metric === 'euclidean' ? -1 : 1;
    const keep = r.reranker ? pool : r.limit;
    const items = ranked.map((m) => ({ relevance: sign * m.score, vector: rows.get(m.ref).vector! }));
    ranked = mmr(items, { diversity: r.mmr.diversity, limit: keep }).map((i) => ranked[i]);
  }

  let note: string | undefined;
  if (r.reranker && ranked.length > 0) {
    ranked = ranked.slice(0, pool);
    await rows.read(ranked.slice(0, MAX_RERANK_DOCUMENTS).map((m) => m.ref));
    const top = ranked.slice(0, MAX_RERANK_DOCUMENTS).filter((m) => rows.has(m.ref));
    try {
      const order = await r.reranker.rerank(r.text ?? '', top.map((m) => rows.get(m.ref).text ?? ''), Math.min(r.limit, top.length));
      // rerank.ts answers each index of `top` at most once, or throws RerankFailed.
      ranked = order.map((o) => ({ ...top[o.index], score: o.relevanceScore, scores: { ...top[o.index].scores, rerank: o.relevanceScore } }));
    } catch (e) {
      if (!(e instanceof RerankFailed)) throw e;
      note = `The reranker gave no answer (${e.message}); the matches are in their order before reranking.`;
    }
  }
  const matches = await rows.kept(ranked, r.limit);
  return note === undefined ? { matches } : { matches, note };
}

/** A listed row before its row is read. */
type Ranked = { ref: RowRef; score: number; scores: NonNullable<RetrievedMatch['scores']> };

/**
 * The rows of the listed refs, each read at most once per search (fusion's keyless ties, MMR the
 * pool's with vectors, rerank the top's texts, the answer its own), absent where the row went
 * since it was listed.
 */
class RowReader {
  readonly #rows = new Map<RowRef, ReadMatch | null>();
  readonly #storage: Storage;
  readonly #r: Retrieval;
  constructor(storage: Storage, r: Retrieval) {
    this.#storage = storage;
    this.#r = r;
  }

  async read(refs: RowRef[]): Promise<void> {
    const unread = [...new Set(refs)].filter((k) => !this.#rows.has(k));
    if (unread.length === 0) return;
    // MMR needs the vectors whether or not the answer shows them.
    const includeVector = this.#r.includeVector || this.#r.mmr !== undefined;
    const found = await this.#storage.readMatches(this.#r.keyspace, this.#r.table, unread, { includeVector });
    for (const k of unread) this.#rows.set(k, found.get(k) ?? null);
  }

  has = (ref: RowRef): boolean => this.#rows.get(ref) != null;
  get = (ref: RowRef): ReadMatch => this.#rows.get(ref)!;

  /**
   * The first `limit` of `ranked` whose rows still exist, with their rows: one read as a rule; a
   * row gone since it was listed gives its place to the next listed, so the answer is short only
   * when the list runs out.
   */
  async kept(ranked: Ranked[], limit: number): Promise<RetrievedMatch[]> {
    const out: RetrievedMatch[] = [];
    let next = 0;
    while (out.length < limit && next < ranked.length) {
      const batch = ranked.slice(next, next + (limit - out.length));
      next += batch.length;
      await this.read(batch.map((m) => m.ref));
      for (const m of batch) {
        if (!this.has(m.ref)) continue;
        // Fields named, not spread: object rest and spread took ~3 µs a match on the main thread.
        const row = this.get(m.ref);
        const match: RetrievedMatch = { score: m.score, scores: m.scores, key: row.key, metadata: row.metadata, text: row.text };
        if (this.#r.includeVector && row.vector !== undefined) match.vector = row.vector;
        out.push(match);
      }
    }
    return out;
  }
}

/** The one place a text query's model call is awaited: storage is given the vector itself. */
async function semanticQuery(r: Retrieval, limit: number, includeVector: boolean): Promise<SearchQuery> {
  return { vector: await r.vector!, metric: r.metric, candidates: r.candidates, ef: r.ef, limit, filter: r.filter, includeVector };
}

const lexical = (storage: Storage, r: Retrieval, limit: number): Promise<ScoredRef[]> =>
  storage.lexicalSearchRefs(r.keyspace, r.table, { text: r.text ?? '', limit: Math.min(limit, MAX_LIST_ROWS), filter: r.filter });
