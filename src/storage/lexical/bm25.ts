/**
 * Okapi BM25 exactly as SQLite FTS5's bm25() computes it (ext/fts5/fts5_aux.c), so that a backend
 * scoring in JS ranks as the embedded backend's FTS5 does: k1 = 1.2, b = 0.75, idf floored at 1e-6.
 * The score is positive (FTS5 returns its negation).
 */
import type { LexicalTokenizer } from '../api.ts';
import { termCounts, tokenize } from './tokenize.ts';

export const BM25_K1 = 1.2;
export const BM25_B = 0.75;

/** Table-wide statistics: rows with text and their total length in tokens. */
export interface Bm25Stats {
  rows: number;
  tokens: number;
}

/** idf of a term found in `n` of `rows` rows; FTS5 floors it at 1e-6 for terms in half the rows or more. */
export function idf(rows: number, n: number): number {
  const v = Math.log((rows - n + 0.5) / (n + 0.5));
  return v <= 0 ? 1e-6 : v;
}

/**
 * One term's share of a row's score: the term occurs `tf` times in a row of `length` tokens.
 * The arithmetic is in FTS5's order, so that equal rows tie on both backends.
 */
export function termScore(termIdf: number, tf: number, length: number, stats: Bm25Stats): number {
  const avg = stats.tokens / stats.rows;
  return termIdf * ((tf * (BM25_K1 + 1.0)) / (tf + BM25_K1 * (1 - BM25_B + (BM25_B * length) / avg)));
}

/** A query's distinct terms, in the order they first occur (FTS5 scores `a OR a` as two phrases; both backends dedupe). */
export const queryTerms = (tokenizer: LexicalTokenizer, text: string): string[] => [...new Set(tokenize(tokenizer, text))];

/** A row's score from its text, given each query term's idf (terms absent from `idfs` count nothing). */
export function scoreText(tokenizer: LexicalTokenizer, text: string, idfs: Map<string, number>, stats: Bm25Stats): number {
  const { counts, length } = termCounts(tokenizer, text);
  let score = 0;
  for (const [term, termIdf] of idfs) {
    const tf = counts.get(term);
    if (tf !== undefined) score += termScore(termIdf, tf, length, stats);
  }
  return score;
}
