/**
 * Top-k pruned BM25 (MaxScore, as Lucene's MaxScoreBulkScorer does it): a query's cost follows the
 * rows of its rarer words, not the posting lists of its commonest. The phrases are taken rarest
 * first; the rarest ones ("essential") bring the candidates, ranked by their own BM25, and every
 * phrase then scores them. The others are left out of the candidate search while even their summed
 * upper bounds cannot lift a row they alone match past the k-th score found; when they could,
 * another phrase (or more candidates) is taken in and the search repeats, so the top k is exact.
 *
 * One rule changes what matches: in a table of PRUNE_FROM_ROWS rows or more, a phrase in half the
 * rows or more (whose idf FTS5 floors at 1e-6) brings no rows of its own, unless every phrase of the
 * query is that common. It still scores the
 * rows the others bring. Both backends apply it (seedPhrases), so they rank alike.
 */
import { compareCodePoints } from '../../index/filter.ts';
import { BM25_B, BM25_K1, type Bm25Stats, idf, type Phrase, phraseCount, scoreTokens } from './bm25.ts';

/** A query phrase with its document frequency and idf. */
export interface WeightedPhrase {
  phrase: Phrase;
  df: number;
  idf: number;
}

export const weigh = (phrases: readonly { phrase: Phrase; df: number }[], rows: number): WeightedPhrase[] => phrases.map((p) => ({ ...p, idf: idf(rows, p.df) }));

/** In tables smaller than this every matching row is kept: in a few rows every word looks common. */
export const PRUNE_FROM_ROWS = 20_000;

/** Whether a phrase is in half the rows or more of a table not small: BM25 floors its idf, and it brings no rows of its own. */
export const isCommon = (df: number, rows: number): boolean => rows >= PRUNE_FROM_ROWS && 2 * df >= rows;

/**
 * The indexes of the phrases whose rows are candidates: those in some row and in fewer than half,
 * or, when every phrase is that common, all of them (a small table, or a query of common words only).
 */
export function seedPhrases(phrases: readonly WeightedPhrase[], rows: number): number[] {
  const found = phrases.map((_, i) => i).filter((i) => phrases[i].df > 0);
  const rare = found.filter((i) => !isCommon(phrases[i].df, rows));
  return rare.length > 0 ? rare : found;
}

/** Whether a row's tokens hold one of the seeding phrases (a row must, to match). */
export const holdsSeed = (tokens: readonly string[], phrases: readonly WeightedPhrase[], seeds: readonly number[]): boolean => seeds.some((i) => phraseCount(tokens, phrases[i].phrase) > 0);

/** More than any one row can get from a phrase: tf / (tf + K) < 1 for every tf and length. */
const upperBound = (p: WeightedPhrase): number => p.idf * (BM25_K1 + 1);

/** A candidate row and its BM25 over the essential phrases alone. */
export interface Candidate<Id> {
  id: Id;
  partial: number;
}

export interface PrunedSource<Id> {
  /** Up to `limit` rows holding any of the phrases `essential` (indexes), best first by BM25 over those phrases alone. */
  candidates(essential: readonly number[], limit: number): Candidate<Id>[];
  /** The rows' keys and current tokens (rows without text left out). */
  rows(ids: readonly Id[]): Map<Id, { key: string; tokens: string[] }>;
  /**
   * Impact-ordered access, optional (without it a query is searched by `candidates` alone):
   * `head`: rows holding phrase `i`, at least the `limit` best by its BM25 alone (or all), each with
   * a bound on that BM25 (Infinity: unknown), and `tail`, a bound on it for any row not listed (0
   * when every row holding the phrase is);
   * `pairs`: up to `limit` rows holding two or more of the phrases `seeds`, best first by a bound
   * on their BM25 over those phrases (partial: no row not listed has a bound above the last's).
   */
  head?(i: number, limit: number): { rows: readonly Candidate<Id>[]; tail: number };
  pairs?(seeds: readonly number[], limit: number): Candidate<Id>[];
}

export interface Ranked<Id> {
  id: Id;
  key: string;
  score: number;
}

const bestFirst = (a: { score: number; key: string }, b: { score: number; key: string }): number => b.score - a.score || compareCodePoints(a.key, b.key);

/** A phrase's share of its idf in a row holding it once, in a text 2.5 times the average length. */
const LOW_TF_SHARE = (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * 2.5));

/** Slack on bounds: the backend's partial scores and ours may differ in the last bits. */
const SLACK = 1 + 1e-9;

/**
 * The best `limit` rows by BM25 over all `phrases` (query order; each row's score summed in that
 * order by scoreTokens, as FTS5 sums it), among rows holding a seeding phrase; ties by key.
 */
export function prunedTopK<Id>(phrases: readonly WeightedPhrase[], stats: Bm25Stats, limit: number, source: PrunedSource<Id>): Ranked<Id>[] {
  const seeds = seedPhrases(phrases, stats.rows);
  if (seeds.length === 0 || limit < 1) return [];
  // Rarest first: the highest upper bounds are essential first.
  const order = [...seeds].sort((a, b) => phrases[a].df - phrases[b].df || a - b);
  // Start with the fewest rarest phrases that may settle it alone: enough rows to fill `limit`, and
  // a weight that keeps a row holding one of them (once, in a long text) above the rest's bounds.
  const restBound = (e: number): number => order.slice(e).reduce((s, i) => s + upperBound(phrases[i]), 0) * SLACK;
  let essential = 1;
  for (let rowsSeen = phrases[order[0]].df; essential < order.length; essential++) {
    const weakest = phrases[order[essential - 1]].idf * LOW_TF_SHARE;
    if (rowsSeen >= limit && weakest > restBound(essential)) break;
    rowsSeen += phrases[order[essential]].df;
  }
  // Phrases too common to seed still add to a row's score: at most their upper bounds.
  const common = phrases.reduce((s, p, i) => (p.df > 0 && !seeds.includes(i) ? s + upperBound(p) : s), 0) * SLACK;
  const scored = new Map<Id, Ranked<Id> | null>();
  if (source.head) {
    const settled = fromHeads(phrases, seeds, common, stats, limit, source, scored);
    if (settled !== null) return settled;
  }
  let depth = limit;
  for (;;) {
    const found = source.candidates(order.slice(0, essential), depth);
    const rest = restBound(essential) + common;
    const top = scoreCandidates(found, phrases, seeds, stats, limit, rest, source, scored);
    const kth = top.length >= limit ? top[limit - 1].score : -Infinity;
    const unseenPartial = found.length < depth ? null : found[depth - 1].partial * SLACK;
    // A row not among the candidates scores at most its partial bound plus the rest's upper bounds.
    // With no phrase left out, an unread row scores at most the last partial read (a tie there is not looked for).
    const unseen = rest === 0 ? (unseenPartial ?? -Infinity) / SLACK : (unseenPartial ?? 0) + rest;
    if ((unseenPartial === null && essential === order.length) || unseen < kth || (rest === 0 && unseen <= kth)) return top.slice(0, limit);
    // Undecided: all the seeding phrases become essential (FTS5 then ranks by nearly the whole
    // score, so a few more rows settle it), or, when they already are, more candidates are read.
    if (essential < order.length) essential = order.length;
    else depth *= 4;
  }
}

/** Rows holding two seeding phrases or more read at least (their count is the intersection's, usually small). */
const PAIR_ROWS = 1000;

/** Queries of more seeding phrases than this are not searched by heads (their pairs grow as the square). */
const MAX_PAIRED = 6;

/**
 * The top `limit` from the heads of the seeding phrases and the best rows holding two or more of
 * them: a row outside both holds one seeding phrase at most, and scores at most that phrase's tail
 * (or the last pair's partial) plus the common phrases' bounds. Null when that does not settle it.
 */
function fromHeads<Id>(
  phrases: readonly WeightedPhrase[],
  seeds: readonly number[],
  common: number,
  stats: Bm25Stats,
  limit: number,
  source: PrunedSource<Id>,
  scored: Map<Id, Ranked<Id> | null>,
): Ranked<Id>[] | null {
  if (seeds.length > MAX_PAIRED) return null;
  const heads = seeds.map((i) => {
    const h = source.head!(i, limit);
    return { shares: new Map(h.rows.map((r) => [r.id, r.partial])), tail: phrases[i].idf * h.tail };
  });
  const ids = new Set(heads.flatMap((h) => [...h.shares.keys()]));
  const tails = heads.reduce((s, h) => s + h.tail, 0);
  // A row's BM25 over the seeding phrases is at most, for each, its share if listed, else the tail.
  const summed = (id: Id): number => heads.reduce((s, h) => s + (h.shares.get(id) ?? h.tail), 0);
  const settle = (bound: (id: Id) => number, unseen: number): Ranked<Id>[] | null => {
    const candidates = [...ids].map((id) => ({ id, partial: bound(id) })).sort((a, b) => b.partial - a.partial);
    const top = scoreCandidates(candidates, phrases, seeds, stats, limit, common, source, scored);
    const beyond = unseen * SLACK + common;
    return beyond === 0 || (top.length >= limit && beyond < top[limit - 1].score) ? top.slice(0, limit) : null;
  };
  const settled = settle(summed, tails);
  if (settled !== null || seeds.length === 1) return settled;
  // The rows holding two seeding phrases or more, best first by a bound: every other row holds one
  // at most, so scores at most its share of that one (or that phrase's tail).
  const depth = Math.max(limit, PAIR_ROWS);
  const both = source.pairs!(seeds, depth);
  const pairTail = both.length < depth ? 0 : both[both.length - 1].partial;
  const paired = new Map(both.map((r) => [r.id, r.partial]));
  for (const r of both) ids.add(r.id);
  const single = (id: Id): number => heads.reduce((s, h) => Math.max(s, h.shares.get(id) ?? 0), 0);
  const bound = (id: Id): number => Math.min(summed(id), paired.get(id) ?? Math.max(single(id), pairTail));
  return settle(bound, Math.max(...heads.map((h) => h.tail), Math.min(pairTail, tails)));
}

/**
 * Scores the candidates best first by partial and stops where even the rest's upper bounds cannot
 * lift one past the k-th score so far. Rows already scored in an earlier round are not read again.
 */
function scoreCandidates<Id>(
  found: readonly Candidate<Id>[],
  phrases: readonly WeightedPhrase[],
  seeds: readonly number[],
  stats: Bm25Stats,
  limit: number,
  rest: number,
  source: PrunedSource<Id>,
  scored: Map<Id, Ranked<Id> | null>,
): Ranked<Id>[] {
  const weighted = phrases.filter((p) => p.df > 0);
  const top: Ranked<Id>[] = [];
  const BATCH = Math.max(limit, 64);
  for (let i = 0; i < found.length; i += BATCH) {
    const part = found.slice(i, i + BATCH);
    if (top.length >= limit && part[0].partial * SLACK + rest < top[limit - 1].score) break;
    const unread = part.filter((c) => !scored.has(c.id)).map((c) => c.id);
    if (unread.length > 0) {
      const rows = source.rows(unread);
      for (const id of unread) {
        const r = rows.get(id);
        scored.set(id, r && holdsSeed(r.tokens, phrases, seeds) ? { id, key: r.key, score: scoreTokens(r.tokens, weighted, stats) } : null);
      }
    }
    for (const c of part) {
      const r = scored.get(c.id);
      if (r) top.push(r);
    }
    top.sort(bestFirst);
  }
  return top;
}
