/** Text helpers every format shares: decoding, normalisation, the character cap. */
import { decodeText } from '../detect.ts';
import { textTooLong, unreadable, type ExtractLimits, type Extracted } from './types.ts';

/**
 * Well-formed (a lone surrogate becomes U+FFFD); Unicode NFC; LF line ends; control characters
 * dropped; runs of spaces and tabs become one space; lines trimmed; paragraphs (blank-line
 * separated) kept as exactly one blank line.
 */
export function normalizeText(text: string): string {
  return text
    // A lone surrogate ("\ud800" in a JSON file) has no UTF-8 form: stored, it would come back
    // as other characters than the ones embedded.
    .toWellFormed()
    .normalize('NFC')
    .replace(/\r\n?|\u2028|\u0085/g, '\n')
    .replace(/[\f\v\u2029]/g, '\n\n')
    .replace(/[\u0000-\u0008\u000e-\u001f\u007f\u00ad\u200b\ufeff]/g, '')
    .replace(/[\t \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** The normalised text of `raw` as an Extracted answer; textTooLong when it (or the input, `overLimit`) passes limits.maxChars. */
export function finish(raw: string, method: string, limits: ExtractLimits, overLimit = false): Extracted {
  const text = normalizeText(raw);
  if (overLimit || text.length > limits.maxChars) throw textTooLong(limits.maxChars);
  return { text, method };
}

/** The decoded text of a text file, or validation_failed when it is not text. */
export function decodeOrRefuse(bytes: Buffer): string {
  const decoded = decodeText(bytes);
  if (decoded === null) throw unreadable('the file is not valid UTF-8 or UTF-16 text');
  return decoded;
}

/**
 * The decoded text, bounded for the text kinds: normalisation only shrinks text, so twice the
 * cap is plenty; `truncated` says the rest was left out (the file is then too long: finish refuses it).
 */
export function readText(bytes: Buffer, limits: ExtractLimits): { text: string; truncated: boolean } {
  const text = decodeOrRefuse(bytes);
  return text.length > 2 * limits.maxChars + 1024 ? { text: text.slice(0, 2 * limits.maxChars), truncated: true } : { text, truncated: false };
}
