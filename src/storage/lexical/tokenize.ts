/**
 * SQLite FTS5's tokenizers in JS, so that a backend without FTS5 (Cassandra) indexes and queries
 * the same terms as the embedded backend's FTS5 tables: `unicode61` (remove_diacritics 1, FTS5's
 * default), `porter` (FTS5's `porter unicode61`) and `trigram` (case_sensitive 0). Which code
 * points are token characters and how they fold comes from FTS5 itself (unicode-table.ts,
 * generated); the Porter steps follow ext/fts5/fts5_tokenize.c rule for rule, over UTF-8 bytes as
 * FTS5 runs them. tokenize.test.ts compares every tokenizer with FTS5 through better-sqlite3.
 */
import type { LexicalTokenizer } from '../api.ts';
import { porterStem } from './porter.ts';
import { FOLD_CASE, FOLD_REMOVE_DIACRITICS, TOKEN_RANGES } from './unicode-table.ts';

const pairs = (flat: readonly number[]): Map<number, number> => {
  const m = new Map<number, number>();
  for (let i = 0; i < flat.length; i += 2) m.set(flat[i], flat[i + 1]);
  return m;
};
const foldDiacritics = pairs(FOLD_REMOVE_DIACRITICS);
const foldCase = pairs(FOLD_CASE);

/** 0: separator, 1: token character, 2: continues a token only (a diacritic). */
function kindOf(c: number): number {
  if (c < 128) return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) ? 1 : 0;
  let lo = 0;
  let hi = TOKEN_RANGES.length / 3 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (c < TOKEN_RANGES[mid * 3]) hi = mid - 1;
    else if (c > TOKEN_RANGES[mid * 3 + 1]) lo = mid + 1;
    else return TOKEN_RANGES[mid * 3 + 2];
  }
  return 0;
}

const lowerAscii = (c: number): number => (c >= 65 && c <= 90 ? c + 32 : c);

/** Code points as SQLite reads the UTF-8 of a JS string: a lone surrogate is U+FFFD. */
function* codePoints(text: string): Generator<number> {
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    yield c >= 0xd800 && c <= 0xdfff ? 0xfffd : c;
  }
}

/** FTS5 unicode61 with remove_diacritics 1: runs of token characters, case and diacritics folded. */
export function unicode61Tokens(text: string): string[] {
  const out: string[] = [];
  let token: number[] | null = null;
  for (const c of codePoints(text)) {
    const kind = kindOf(c);
    if (token === null) {
      if (kind !== 1) continue;
      token = [];
    } else if (kind === 0) {
      out.push(String.fromCodePoint(...token));
      token = null;
      continue;
    }
    const f = c < 128 ? lowerAscii(c) : (foldDiacritics.get(c) ?? c);
    if (f !== 0) token.push(f);
  }
  if (token !== null) out.push(String.fromCodePoint(...token));
  return out;
}

/** FTS5 `porter unicode61`: each unicode61 token through FTS5's Porter stemmer. */
export const porterTokens = (text: string): string[] => unicode61Tokens(text).map(porterStem);

/** FTS5 trigram (case_sensitive 0): every run of three consecutive characters, case folded, spaces included. */
export function trigramTokens(text: string): string[] {
  const chars: number[] = [];
  for (const c of codePoints(text)) {
    const f = c < 128 ? lowerAscii(c) : (foldCase.get(c) ?? c);
    if (f !== 0) chars.push(f);
  }
  const out: string[] = [];
  for (let i = 0; i + 3 <= chars.length; i++) out.push(String.fromCodePoint(chars[i], chars[i + 1], chars[i + 2]));
  return out;
}

/** A text's tokens, in order, with repeats, as the table's FTS5 tokenizer gives them. */
export function tokenize(tokenizer: LexicalTokenizer, text: string): string[] {
  switch (tokenizer) {
    case 'porter':
      return porterTokens(text);
    case 'unicode61':
      return unicode61Tokens(text);
    case 'trigram':
      return trigramTokens(text);
  }
}

/** A text's terms with their counts (term frequencies) and its length in tokens. */
export function termCounts(tokenizer: LexicalTokenizer, text: string): { counts: Map<string, number>; length: number } {
  const tokens = tokenize(tokenizer, text);
  const counts = new Map<string, number>();
  for (const t of tokens) counts.set(t, (counts.get(t) ?? 0) + 1);
  return { counts, length: tokens.length };
}
