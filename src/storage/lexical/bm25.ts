/**
 * Okapi BM25 exactly as SQLite FTS5's bm25() computes it (ext/fts5/fts5_aux.c), so that a backend
 * scoring in JS ranks as the embedded backend's FTS5 does: k1 = 1.2, b = 0.75, idf floored at 1e-6.
 * The score is positive (FTS5 returns its negation).
 */
import type { LexicalTokenizer } from '../api.ts';
import { queryWords } from '../lexical-terms.ts';
import { tokenize } from './tokenize.ts';

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

/**
 * A query as FTS5 is given it (embedded/lexical.ts): each of its words (lexical-terms.ts) is a
 * quoted phrase, split by the table's tokenizer: one token as a rule, several under trigram (or for
 * a word FTS5 splits). A word with no tokens matches nothing. Words with the same stem stay two
 * phrases and count twice, as in FTS5.
 */
export type Phrase = string[];

export const queryPhrases = (tokenizer: LexicalTokenizer, text: string): Phrase[] => queryWords(text).map((w) => tokenize(tokenizer, w)).filter((p) => p.length > 0);

/** How often the phrase occurs in a row's tokens: consecutive, overlapping occurrences counted, as FTS5 counts. */
export function phraseCount(tokens: readonly string[], phrase: Phrase): number {
  let n = 0;
  for (let i = 0; i + phrase.length <= tokens.length; i++) {
    let j = 0;
    while (j < phrase.length && tokens[i + j] === phrase[j]) j++;
    if (j === phrase.length) n++;
  }
  return n;
}

/** A row's score from its tokens, given each phrase's idf (phrases summed in query order, as FTS5 does). */
export function scoreTokens(tokens: readonly string[], phrases: readonly { phrase: Phrase; idf: number }[], stats: Bm25Stats): number {
  let score = 0;
  for (const { phrase, idf: w } of phrases) {
    const tf = phraseCount(tokens, phrase);
    if (tf > 0) score += termScore(w, tf, tokens.length, stats);
  }
  return score;
}
