/** CSV and TSV: RFC 4180 records, a header row's labels as `label: value`. */
import { finish, readText } from './text.ts';
import type { FormatExtractor } from './types.ts';

/**
 * RFC 4180 records: fields split by `delimiter`, records by CRLF / LF / CR, double-quoted fields
 * may hold delimiters, line breaks and `""`. Lenient: a stray quote inside an unquoted field is
 * kept, an unclosed quote runs to the end. Stops after `maxRecords`.
 */
/** The record of a blank line (one empty field), shared by every blank line; callers only read rows. */
const BLANK_ROW: string[] = Object.freeze(['']) as unknown as string[];

export function parseCsv(text: string, delimiter = ',', maxRecords = Infinity): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let i = 0;
  const n = text.length;
  const d = delimiter.charCodeAt(0);
  while (i < n && rows.length < maxRecords) {
    let c = text.charCodeAt(i);
    if (c === 0x22 && field === '') {
      // quoted field
      i++;
      let start = i;
      let parts = '';
      while (i < n) {
        const q = text.indexOf('"', i);
        if (q === -1) {
          i = n;
          break;
        }
        if (text.charCodeAt(q + 1) === 0x22) {
          parts += text.slice(start, q + 1);
          i = q + 2;
          start = i;
          continue;
        }
        i = q + 1;
        parts += text.slice(start, q);
        start = -1;
        break;
      }
      if (start !== -1) parts += text.slice(start, n);
      field = parts;
      // anything up to the next delimiter / line end after the closing quote is kept as is
      while (i < n) {
        c = text.charCodeAt(i);
        if (c === d || c === 0x0a || c === 0x0d) break;
        field += text[i++];
      }
      continue;
    }
    if (c === d) {
      row.push(field);
      field = '';
      i++;
    } else if (c === 0x0a || c === 0x0d) {
      // A blank line shares one row: a file of a million line breaks makes no million arrays.
      if (row.length === 0 && field === '') rows.push(BLANK_ROW);
      else {
        row.push(field);
        rows.push(row);
        row = [];
      }
      field = '';
      i += c === 0x0d && text.charCodeAt(i + 1) === 0x0a ? 2 : 1;
    } else {
      // run of plain characters
      let j = i + 1;
      while (j < n) {
        const k = text.charCodeAt(j);
        if (k === d || k === 0x0a || k === 0x0d) break;
        j++;
      }
      field += text.slice(i, j);
      i = j;
    }
  }
  if ((field !== '' || row.length > 0) && rows.length < maxRecords) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** The delimiter among , ; tab and | that occurs most in the first line (outside quotes). */
export function sniffDelimiter(text: string): string {
  const firstLine = text.slice(0, 4096).split(/\r?\n|\r/, 1)[0].replace(/"[^"]*"/g, '');
  let best = ',';
  let bestCount = 0;
  for (const c of [',', '\t', ';', '|']) {
    const count = firstLine.split(c).length - 1;
    if (count > bestCount) {
      best = c;
      bestCount = count;
    }
  }
  return best;
}

const NUMERIC = /^[-+]?[$€£¥]?\s?(?:\d[\d,_ ]*)?(?:\.\d+)?(?:[eE][-+]?\d+)?\s?%?$/;
const DATE = /^\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}(?:[T ][\d:.]+Z?)?$/;
const isValue = (s: string): boolean => s !== '' && (NUMERIC.test(s) || DATE.test(s) || /^(?:true|false|null)$/i.test(s));

/** A first row of distinct, non-empty, short labels that are not numbers or dates. */
export function looksLikeHeader(rows: string[][]): boolean {
  if (rows.length < 2) return false;
  const head = rows[0].map((c) => c.trim());
  if (head.length < 2) return false;
  if (head.some((c) => c === '' || c.length > 80 || isValue(c))) return false;
  return new Set(head.map((c) => c.toLowerCase())).size === head.length;
}

const cell = (s: string): string => s.replace(/\s+/g, ' ').trim();

export const extractCsv: FormatExtractor = async (bytes, limits) => {
  const { text, truncated: cut } = readText(bytes, limits);
  const delimiter = sniffDelimiter(text);
  const rows = parseCsv(text, delimiter).filter((r) => r.some((c) => c.trim() !== ''));
  const header = looksLikeHeader(rows);
  const names = header ? rows[0].map(cell) : [];
  const lines: string[] = [];
  let chars = 0;
  let truncated = cut;
  for (let r = header ? 1 : 0; r < rows.length; r++) {
    if (chars > limits.maxChars) {
      truncated = true;
      break;
    }
    const row = rows[r];
    const line = header
      ? row
          .map((v, i) => [names[i] ?? `column ${i + 1}`, cell(v)] as const)
          .filter(([, v]) => v !== '')
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ')
      : row.map(cell).filter((v) => v !== '').join(', ');
    if (line === '') continue;
    lines.push(line);
    chars += line.length + 1;
  }
  return finish(lines.join('\n'), `csv:rfc4180${header ? '+header' : ''}`, limits, truncated);
};
