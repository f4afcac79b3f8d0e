/**
 * Fusion of a semantic (vector) and a lexical (full-text) result list into one ranking, for
 * hybrid search. Pure arithmetic on the two lists as storage returned them.
 */
import type { RowRef, ScoredRef } from '../storage/api.ts';

/** `rrf`: reciprocal rank fusion with constant k. `relative`: min-max normalised scores, alpha on the semantic side. */
export type Fusion = { method: 'rrf'; k: number } | { method: 'relative'; alpha: number };

/**
 * The constants of each method when a request names only the method, and the default method:
 * the best over three judged sets in bench/hybrid-eval.bench.ts (which prints nDCG@10 per method).
 */
export const DEFAULT_RRF_K = 60;
export const DEFAULT_ALPHA = 0.5;
export const DEFAULT_FUSION: Fusion = { method: 'relative', alpha: DEFAULT_ALPHA };

export interface Fused {
  /** The row, as storage listed it (the same in both lists). */
  ref: RowRef;
  /** Its key where a list gave it: ties are broken by key (see keylessTies). */
  key?: string;
  /** The fused score: higher is better. */
  score: number;
  /** The row's score in each list as given, null where that list lacked the row. */
  semantic: number | null;
  lexical: number | null;
}

/**
 * Both lists best first; returns their union best first, ties by key in code-unit order (rows
 * tied with a row whose key no list gave stay in list order: see keylessTies and sortFused).
 * rrf: Σ 1/(k + rank), rank from 1. relative: each list's scores min-max normalised to [0, 1]
 * (a list with one distinct score gives 1), alpha·semantic + (1 − alpha)·lexical, a missing side
 * counting 0. A row listed twice in one list counts at its first (best) place only.
 */
export function fuse(semantic: readonly ScoredRef[], lexical: readonly ScoredRef[], fusion: Fusion): Fused[] {
  const rows = new Map<RowRef, Fused>();
  const row = (item: ScoredRef) => {
    let r = rows.get(item.ref);
    if (!r) rows.set(item.ref, (r = { ref: item.ref, key: item.key, score: 0, semantic: null, lexical: null }));
    else r.key ??= item.key;
    return r;
  };
  const add = (list: readonly ScoredRef[], side: 'semantic' | 'lexical', weight: number) => {
    const contribution = fusion.method === 'rrf' ? (_s: number, rank: number) => 1 / (fusion.k + rank) : normaliser(list);
    list.forEach((item, i) => {
      const r = row(item);
      if (r[side] !== null) return;
      r[side] = item.score;
      r.score += weight * contribution(item.score, i + 1);
    });
  };
  // RRF weighs both lists alike (its usual form); relative puts alpha on the semantic side.
  const [semanticWeight, lexicalWeight] = fusion.method === 'rrf' ? [1, 1] : [fusion.alpha, 1 - fusion.alpha];
  add(semantic, 'semantic', semanticWeight);
  add(lexical, 'lexical', lexicalWeight);
  return sortFused([...rows.values()]);
}

/** Sorts fused rows best first, ties by key where both rows have one (stable otherwise); answers `rows`. */
export function sortFused(rows: Fused[]): Fused[] {
  return rows.sort((a, b) => b.score - a.score || (a.key === undefined || b.key === undefined ? 0 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/**
 * The rows without a key that tie in score with another row, in runs of equal scores that begin
 * among the first `upTo` (those whose order can decide what a search answers): their keys are
 * needed before sortFused can order them.
 */
export function keylessTies(fused: readonly Fused[], upTo: number): Fused[] {
  const out: Fused[] = [];
  for (let i = 0; i < fused.length && i < upTo; ) {
    let j = i + 1;
    while (j < fused.length && fused[j].score === fused[i].score) j++;
    if (j - i > 1) for (let x = i; x < j; x++) if (fused[x].key === undefined) out.push(fused[x]);
    i = j;
  }
  return out;
}

/**
 * Maps a best-first list's scores onto [0, 1], its best score to 1 and its worst to 0. Which end
 * is best is read from the order, so a list of distances (lower is nearer, as euclidean search
 * gives) normalises as rightly as one of similarities.
 */
function normaliser(list: readonly ScoredRef[]): (score: number) => number {
  if (list.length === 0) return () => 0;
  let min = Infinity;
  let max = -Infinity;
  for (const { score } of list) {
    if (score < min) min = score;
    if (score > max) max = score;
  }
  if (!(max > min)) return () => 1;
  const lowerIsBetter = list[0]!.score < list[list.length - 1]!.score;
  return lowerIsBetter ? (s) => (max - s) / (max - min) : (s) => (s - min) / (max - min);
}
