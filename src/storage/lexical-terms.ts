/**
 * The words of a lexical query, the same on every backend so that they rank alike: runs of
 * letters, numbers and marks (what FTS5's unicode61 keeps as token characters; everything else,
 * FTS5 syntax included, separates), lower-cased, each distinct word once in order of first
 * appearance. A backend then tokenizes each word with the table's tokenizer (porter stems it,
 * trigram splits it) and lets any of them match.
 */

/** Words past this many are not searched: an 8 KiB query stays one bounded lookup. */
export const MAX_QUERY_WORDS = 64;

const WORD = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;

/** Case- and diacritic-folded, so that "Resume" and "résumé" count as one word (unicode61 folds both). */
const foldKey = (w: string): string => w.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();

export function queryWords(text: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const m of text.matchAll(WORD)) {
    const key = foldKey(m[0]);
    if (key === '' || seen.has(key)) continue;
    seen.add(key);
    out.push(m[0].toLowerCase());
    if (out.length === MAX_QUERY_WORDS) break;
  }
  return out;
}
