/**
 * Sentences of a stored passage, for extractive chat answers. One pass over the text with a
 * little state instead of a look-behind regex: `(?<=[.!?…]["')\]]*)` re-read the whole run of
 * quotes at every position, so 65,000 quotes took seconds.
 */

const TERMINALS = new Set(['.', '!', '?', '…']);
const CLOSERS = new Set(['"', "'", '”', '’', ')', ']']);
const OPENERS = new Set(['"', "'", '“', '‘', '(', '[']);
const CJK_STOPS = new Set(['。', '！', '？']);
const LIST_MARKERS = new Set(['-', '*', '•', '#', '>']);
const SENTENCE_START = /^[\p{Lu}\p{N}]$/u;
const LETTER = /^\p{L}$/u;
const WHITESPACE = /^\s$/;
/** A sentence longer than this is cut (with an ellipsis): the model reads 256 tokens anyway. */
const MAX_SENTENCE_CHARS = 1000;

/**
 * Sentences of a passage: paragraphs (blank lines, list items, headings) first, then sentence
 * ends (`.`, `!`, `?`, `…`, optionally followed by closing quotes or brackets) followed by space
 * and a capital or digit, and CJK full stops. Fragments without three letters are dropped.
 * Linear in the text.
 */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  const keep = (piece: string): void => {
    const s = piece.trim();
    if (hasThreeLetters(s)) out.push(s.length > MAX_SENTENCE_CHARS ? `${s.slice(0, MAX_SENTENCE_CHARS - 1)}…` : s);
  };
  for (const block of blocksOf(text)) {
    const flat = block.replace(/\s+/g, ' ').trim();
    let start = 0;
    // True while the characters just read end a sentence: a terminal, then only closers.
    let afterEnd = false;
    for (let i = 0; i < flat.length; i++) {
      const c = flat[i];
      if (CJK_STOPS.has(c)) {
        keep(flat.slice(start, i + 1));
        start = i + 1;
        afterEnd = false;
        continue;
      }
      if (c === ' ' && afterEnd && startsSentence(flat, i + 1)) {
        keep(flat.slice(start, i));
        start = i + 1;
      }
      afterEnd = TERMINALS.has(c) || (afterEnd && CLOSERS.has(c));
    }
    keep(flat.slice(start));
  }
  return out;
}

/** Paragraphs: lines between blank lines, a list item or heading line starting a new one. */
function blocksOf(text: string): string[] {
  const blocks: string[] = [];
  let blockStart = -1; // where the current paragraph starts, -1 between paragraphs
  for (let at = 0; at <= text.length; ) {
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    const line = text.slice(at, end);
    const blank = line.trim() === '';
    if (blockStart >= 0 && (blank || startsItem(line))) {
      blocks.push(text.slice(blockStart, at - 1));
      blockStart = -1;
    }
    if (!blank && blockStart < 0) blockStart = at;
    at = end + 1;
  }
  if (blockStart >= 0) blocks.push(text.slice(blockStart));
  return blocks;
}

/** `- item`, `* item`, `• item`, `# heading`, `> quote`, `12. item`, `3) item` (after any indent). */
function startsItem(line: string): boolean {
  let i = 0;
  while (i < line.length && isSpace(line[i])) i++;
  if (LIST_MARKERS.has(line[i])) return isSpace(line[i + 1]);
  const digits = i;
  while (i < line.length && line[i] >= '0' && line[i] <= '9') i++;
  return i > digits && (line[i] === '.' || line[i] === ')') && isSpace(line[i + 1]);
}

const isSpace = (c: string | undefined): boolean => c !== undefined && WHITESPACE.test(c);

/** An optional opening quote or bracket, then a capital letter or a digit. */
function startsSentence(s: string, i: number): boolean {
  if (OPENERS.has(s[i])) i++;
  const cp = s.codePointAt(i);
  return cp !== undefined && SENTENCE_START.test(String.fromCodePoint(cp));
}

function hasThreeLetters(s: string): boolean {
  let n = 0;
  for (const ch of s) if (LETTER.test(ch) && ++n === 3) return true;
  return false;
}
