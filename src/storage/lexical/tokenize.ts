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

/** ASCII letters and digits: unicode61's token characters below 128. */
const ASCII_ALNUM = new Uint8Array(128).map((_, c) => ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) ? 1 : 0));

/** 0: separator, 1: token character, 2: continues a token only (a diacritic); for code points >= 128. */
function kindOf(c: number): number {
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

/** The code point at `i` as SQLite reads the UTF-8 of a JS string (a lone surrogate is U+FFFD), and its width in code units. */
function codePointAt(text: string, i: number): [cp: number, width: number] {
  const c = text.charCodeAt(i);
  if (c < 0xd800 || c > 0xdfff) return [c, 1];
  if (c <= 0xdbff && i + 1 < text.length) {
    const d = text.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return [((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000, 2];
  }
  return [0xfffd, 1];
}

/**
 * FTS5 unicode61 with remove_diacritics 1: runs of token characters, case and diacritics folded.
 * Runs of ASCII are sliced and lower-cased whole: this runs over every text written and searched.
 */
export function unicode61Tokens(text: string): string[] {
  const out: string[] = [];
  const n = text.length;
  let token: string | null = null;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c < 128) {
      if (ASCII_ALNUM[c] === 0) {
        if (token !== null) out.push(token);
        token = null;
        i++;
        continue;
      }
      let j = i + 1;
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d >= 128 || ASCII_ALNUM[d] === 0) break;
        j++;
      }
      const run = text.slice(i, j).toLowerCase();
      token = token === null ? run : token + run;
      i = j;
      continue;
    }
    const [cp, width] = codePointAt(text, i);
    i += width;
    const kind = kindOf(cp);
    if (token === null) {
      if (kind !== 1) continue;
      token = '';
    } else if (kind === 0) {
      out.push(token);
      token = null;
      continue;
    }
    const f = foldDiacritics.get(cp) ?? cp;
    if (f !== 0) token += String.fromCodePoint(f);
  }
  if (token !== null) out.push(token);
  return out;
}

/** FTS5 `porter unicode61`: each unicode61 token through FTS5's Porter stemmer. */
export const porterTokens = (text: string): string[] => unicode61Tokens(text).map(porterStem);

/** FTS5 trigram (case_sensitive 0): every run of three consecutive characters, case folded, spaces included. */
export function trigramTokens(text: string): string[] {
  const chars: string[] = [];
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c < 128) {
      // NUL folds to nothing, as in FTS5; A-Z to a-z.
      if (c !== 0) chars.push(String.fromCharCode(c >= 65 && c <= 90 ? c + 32 : c));
      i++;
      continue;
    }
    const [cp, width] = codePointAt(text, i);
    i += width;
    const f = foldCase.get(cp) ?? cp;
    if (f !== 0) chars.push(String.fromCodePoint(f));
  }
  const out: string[] = new Array(Math.max(0, chars.length - 2));
  for (let i = 0; i + 3 <= chars.length; i++) out[i] = chars[i] + chars[i + 1] + chars[i + 2];
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
