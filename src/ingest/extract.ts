import type { Readable } from 'node:stream';
import type { getDocumentProxy } from 'unpdf';
import type yauzl from 'yauzl';
import { ServiceError } from '../errors.ts';
import { lazyImport } from '../lazy-import.ts';
import { cachedJson, decodeText, parseJsonText, type FileType } from './detect.ts';
import { flateExpandedBytes } from './pdf-streams.ts';

// The parsers load on the first file of their kind, not at start.
const loadHtmlToText = lazyImport(() => import('html-to-text'));
const loadMammoth = lazyImport(() => import('mammoth'));
const loadUnpdf = lazyImport(() => import('unpdf'));
const loadYauzl = lazyImport(() => import('yauzl'));

export interface ExtractLimits {
  /** Most characters of text kept (the rest is cut off and `truncated` set). */
  maxChars: number;
  /** Most PDF pages read (the rest are skipped and `truncated` set). */
  maxPages: number;
  /** Most bytes a .docx (a zip) may expand to, summed over its entries. */
  maxExpandedBytes: number;
}

export const DEFAULT_EXTRACT_LIMITS: Readonly<ExtractLimits> = Object.freeze({
  maxChars: 10_000_000,
  maxPages: 2_000,
  maxExpandedBytes: 256 * 1024 * 1024,
});

export interface Extracted {
  text: string;
  /** How the text was obtained, e.g. `pdf:unpdf`, `csv:rfc4180+header`; notes a truncation. */
  method: string;
  /** PDF: pages read. */
  pages?: number;
  /** PDF: pages in the document. */
  totalPages?: number;
  /** Set when a limit cut the text (pages or characters). */
  truncated?: boolean;
}

/** A docx with more entries than this is not a Word document anyone wrote. */
export const MAX_ZIP_ENTRIES = 10_000;
/** Entries above this size must not expand more than MAX_COMPRESSION_RATIO times (DEFLATE's own ceiling is ~1032). */
const RATIO_CHECK_MIN_BYTES = 1 << 20;
export const MAX_COMPRESSION_RATIO = 200;

const unreadable = (message: string, cause?: unknown): ServiceError =>
  new ServiceError('validation_failed', message, { errors: [{ path: '/file', message }], cause });

/* ------------------------------------------------------------------ text helpers */

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

/** At most `max` characters, cut at a whitespace when there is one near the end, never inside a surrogate pair. */
export function capChars(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  let cut = max;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  const ws = text.slice(Math.max(0, cut - 1000), cut).search(/\s\S*$/);
  if (ws > 0) cut = Math.max(0, cut - 1000) + ws;
  return { text: text.slice(0, cut).trimEnd(), truncated: true };
}

/* ------------------------------------------------------------------ pdf */

interface PdfTextItem {
  str?: string;
  hasEOL?: boolean;
}

async function extractPdf(bytes: Buffer, limits: ExtractLimits): Promise<Extracted> {
  if ((await flateExpandedBytes(bytes, limits.maxExpandedBytes)) > limits.maxExpandedBytes) {
    const msg = `the PDF's compressed streams expand to more than the limit of ${limits.maxExpandedBytes} bytes`;
    throw new ServiceError('payload_too_large', msg, { errors: [{ path: '/file', message: msg }] });
  }
  const unpdf = await loadUnpdf();
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // A copy: pdf.js may take over (detach) the buffer it is given.
    pdf = await unpdf.getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, stopAtErrors: false, isEvalSupported: false });
  } catch (e) {
    const name = (e as { name?: string } | null)?.name;
    if (name === 'PasswordException') throw unreadable('the PDF is encrypted (password protected)', e);
    throw unreadable(`not a readable PDF: ${(e as Error)?.message ?? String(e)}`, e);
  }
  try {
    const totalPages = pdf.numPages;
    const wanted = Math.min(totalPages, limits.maxPages);
    const texts: string[] = [];
    let chars = 0;
    let read = 0;
    for (let n = 1; n <= wanted && chars <= limits.maxChars; n++) {
      if (n > 1) await new Promise<void>((resolve) => setImmediate(resolve)); // let other requests run between pages
      let pageText: string;
      try {
        const page = await pdf.getPage(n);
        const content = await page.getTextContent();
        pageText = (content.items as PdfTextItem[]).map((it) => (it.str ?? '') + (it.hasEOL ? '\n' : '')).join('');
        page.cleanup();
      } catch (e) {
        if (n === 1) throw unreadable(`not a readable PDF: ${(e as Error)?.message ?? String(e)}`, e);
        break; // damaged later pages: keep what was read
      }
      texts.push(pageText);
      chars += pageText.length;
      read = n;
    }
    const capped = capChars(normalizeText(texts.join('\n\n')), limits.maxChars);
    const truncated = read < totalPages || capped.truncated;
    let method = 'pdf:unpdf';
    if (read < totalPages) method += ` (first ${read} of ${totalPages} pages)`;
    else if (capped.truncated) method += ` (first ${limits.maxChars} characters)`;
    return { text: capped.text, method, pages: read, totalPages, ...(truncated ? { truncated } : {}) };
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
}

/* ------------------------------------------------------------------ docx */

const openZip = async (bytes: Buffer): Promise<yauzl.ZipFile> => {
  const { default: yauzlLib } = await loadYauzl();
  return new Promise((resolve, reject) => {
    yauzlLib.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, decodeStrings: true, strictFileNames: false }, (err, zip) =>
      err || !zip ? reject(err ?? new Error('no zip')) : resolve(zip),
    );
  });
};

/** Every entry of the central directory, without reading any file data. */
async function zipEntries(bytes: Buffer): Promise<yauzl.Entry[]> {
  const zip = await openZip(bytes);
  return new Promise((resolve, reject) => {
    const entries: yauzl.Entry[] = [];
    zip.on('error', reject);
    zip.on('entry', (entry: yauzl.Entry) => {
      entries.push(entry);
      if (entries.length > MAX_ZIP_ENTRIES) {
        zip.close();
        reject(unreadable(`the Word document has more than ${MAX_ZIP_ENTRIES} parts`));
        return;
      }
      zip.readEntry();
    });
    zip.on('end', () => resolve(entries));
    zip.readEntry();
  });
}

/** Inflates one entry into nowhere, counting; yauzl stops with an error once it outgrows its declared size. */
async function drainEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<number> {
  const stream = await new Promise<Readable>((resolve, reject) =>
    zip.openReadStream(entry, (err, s) => (err || !s ? reject(err ?? new Error('no stream')) : resolve(s))),
  );
  let n = 0;
  for await (const chunk of stream) n += (chunk as Buffer).length;
  return n;
}

/**
 * Zip-bomb guard, run before mammoth (which inflates whole parts in memory):
 * 1. From the central directory alone (nothing inflated): at most MAX_ZIP_ENTRIES entries, no
 *    encrypted entry, no entry larger than 1 MiB expanding more than MAX_COMPRESSION_RATIO times
 *    (a bomb: 400 validation_failed), and declared sizes summing to at most maxExpandedBytes
 *    (an honest but too big document: 413 payload_too_large).
 * 2. The declared sizes are the sender's claim, so every entry is then inflated as a stream and
 *    thrown away (a few KiB in memory at a time): yauzl fails an entry the moment it yields more
 *    bytes than declared, so a lying header costs at most maxExpandedBytes of CPU, never memory.
 */
export async function checkDocxZip(bytes: Buffer, maxExpandedBytes: number): Promise<void> {
  let entries: yauzl.Entry[];
  try {
    entries = await zipEntries(bytes);
  } catch (e) {
    if (e instanceof ServiceError) throw e;
    throw unreadable(`not a readable Word document: ${(e as Error).message}`, e);
  }
  let total = 0;
  for (const e of entries) {
    if (e.isEncrypted()) throw unreadable('the Word document is encrypted');
    const size = e.uncompressedSize;
    if (size > RATIO_CHECK_MIN_BYTES && (e.compressedSize === 0 || size / e.compressedSize > MAX_COMPRESSION_RATIO)) {
      throw unreadable(
        `the Word document looks like a zip bomb: ${e.fileName} expands ${e.compressedSize === 0 ? 'from nothing' : `${Math.round(size / e.compressedSize)} times`} to ${size} bytes`,
      );
    }
    total += size;
  }
  if (total > maxExpandedBytes) {
    const msg = `the Word document expands to ${total} bytes, more than the limit of ${maxExpandedBytes}`;
    throw new ServiceError('payload_too_large', msg, { errors: [{ path: '/file', message: msg }] });
  }
  let zip: yauzl.ZipFile | undefined;
  try {
    zip = await openZip(bytes);
    for (const e of entries) {
      if (e.fileName.endsWith('/')) continue;
      await drainEntry(zip, e);
    }
  } catch (e) {
    throw unreadable(`not a readable Word document: ${(e as Error).message}`, e);
  } finally {
    zip?.close();
  }
}

async function extractDocx(bytes: Buffer, limits: ExtractLimits): Promise<Extracted> {
  await checkDocxZip(bytes, limits.maxExpandedBytes);
  const { default: mammoth } = await loadMammoth();
  let raw: string;
  try {
    raw = (await mammoth.extractRawText({ buffer: bytes })).value;
  } catch (e) {
    throw unreadable(`not a readable Word document: ${(e as Error).message}`, e);
  }
  return finish(raw, 'docx:mammoth', limits);
}

/* ------------------------------------------------------------------ html */

const VOID_OR_SELF_CLOSING = new Set(
  'area base br col embed hr img input link meta source track wbr param keygen p li dt dd tr td th option optgroup rb rt rp'.split(' '),
);
/** Budget for htmlparser2's element stack work (see htmlStackWork): ~0.5 s on the target. */
export const MAX_HTML_STACK_WORK = 1e9;

/**
 * htmlparser2 (under html-to-text) keeps its open elements in an array it unshifts to, so each
 * opening tag costs the current nesting depth: 400 000 unclosed <div>s (2 MB) take ~50 s. This
 * linear pre-scan sums the depth over opening tags (tags with implied or no end tag left out).
 */
export function htmlStackWork(html: string): number {
  const re = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)/g;
  let depth = 0;
  let work = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(html)) !== null) {
    if (VOID_OR_SELF_CLOSING.has(m[2].toLowerCase())) continue;
    if (m[1] === '/') {
      if (depth > 0) depth--;
    } else work += ++depth;
  }
  return work;
}

async function extractHtml(text: string, limits: ExtractLimits): Promise<Extracted> {
  if (htmlStackWork(text) > MAX_HTML_STACK_WORK) throw unreadable('the HTML is nested too deeply to read (unclosed elements)');
  const { convert: htmlToText } = await loadHtmlToText();
  const out = htmlToText(text, {
    wordwrap: false,
    preserveNewlines: false,
    limits: { maxInputLength: text.length + 1, maxDepth: 256, ellipsis: '' },
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'picture', format: 'skip' },
      { selector: 'svg', format: 'skip' },
      { selector: 'canvas', format: 'skip' },
      { selector: 'video', format: 'skip' },
      { selector: 'audio', format: 'skip' },
      { selector: 'iframe', format: 'skip' },
      { selector: 'object', format: 'skip' },
      { selector: 'noscript', format: 'skip' },
      { selector: 'template', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'button', format: 'skip' },
      { selector: 'select', format: 'skip' },
      ...(['h1', 'h2', 'h3', 'h4', 'h5', 'h6'] as const).map((h) => ({ selector: h, options: { uppercase: false } })),
      { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
    ],
  });
  return finish(out, 'html:html-to-text', limits);
}

/* ------------------------------------------------------------------ json */

const MAX_PATH_DEPTH = 32;

/**
 * `path: value` lines for every scalar (document order), e.g. `authors[0].name: Ada`. Top-level
 * array items (and JSON Lines records) are separated by a blank line, their index left out.
 * Iterative (no recursion limit), stops once `maxChars` is reached.
 */
export function flattenJson(value: unknown, maxChars: number): { text: string; truncated: boolean } {
  const lines: string[] = [];
  let chars = 0;
  type Frame = { v: unknown; path: string; depth: number; sep?: boolean };
  const stack: Frame[] = [];
  if (Array.isArray(value)) {
    for (let i = value.length - 1; i >= 0; i--) stack.push({ v: value[i], path: '', depth: 1, sep: i > 0 });
  } else stack.push({ v: value, path: '', depth: 0 });
  while (stack.length > 0) {
    if (chars > maxChars) return { text: lines.join('\n'), truncated: true };
    const { v, path, depth, sep } = stack.pop()!;
    if (sep && lines.length > 0 && lines[lines.length - 1] !== '') lines.push('');
    if (v !== null && typeof v === 'object') {
      const deeper = depth + 1;
      const join = (seg: string, isIndex: boolean): string =>
        depth >= MAX_PATH_DEPTH ? path : isIndex || path === '' ? `${path}${seg}` : `${path}.${seg}`;
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: join(`[${i}]`, true), depth: deeper });
      } else {
        const keys = Object.keys(v);
        for (let i = keys.length - 1; i >= 0; i--) stack.push({ v: (v as Record<string, unknown>)[keys[i]], path: join(keys[i], false), depth: deeper });
      }
      continue;
    }
    const s = v === null ? 'null' : String(v);
    const line = path === '' ? s : `${path}: ${s}`;
    lines.push(line);
    chars += line.length + 1;
  }
  return { text: lines.join('\n'), truncated: false };
}

function extractJson(bytes: Buffer, text: string, limits: ExtractLimits): Extracted {
  const parsed = cachedJson(bytes) ?? parseJsonText(text);
  if (!parsed) throw unreadable('not valid JSON');
  const flat = flattenJson(parsed.value, limits.maxChars);
  return finish(flat.text, 'json:flatten', limits, flat.truncated);
}

/* ------------------------------------------------------------------ csv */

/**
 * RFC 4180 records: fields split by `delimiter`, records by CRLF / LF / CR, double-quoted fields
 * may hold delimiters, line breaks and `""`. Lenient: a stray quote inside an unquoted field is
 * kept, an unclosed quote runs to the end. Stops after `maxRecords`.
 */
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
      row.push(field);
      rows.push(row);
      row = [];
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

function extractCsv(text: string, limits: ExtractLimits): Extracted {
  const delimiter = sniffDelimiter(text);
  const rows = parseCsv(text, delimiter).filter((r) => r.some((c) => c.trim() !== ''));
  const header = looksLikeHeader(rows);
  const names = header ? rows[0].map(cell) : [];
  const lines: string[] = [];
  let chars = 0;
  let truncated = false;
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
}

/* ------------------------------------------------------------------ markdown */

/** Removes trailing spaces, tabs and closing #s of an ATX heading (a loop: no regex backtracking). */
function headingText(line: string): string {
  let end = line.length;
  while (end > 0 && /[ \t#]/.test(line[end - 1])) end--;
  return line.slice(0, end);
}

/**
 * Light Markdown to text: headings become their own paragraphs; link targets, emphasis, code
 * fences and HTML tags go. Every pattern's inner run stops at its own delimiter, so the work is
 * linear in the input however hostile it is (no quadratic backtracking).
 */
export function stripMarkdown(md: string): string {
  return md
    .replace(/\r\n?/g, '\n')
    .replace(/^[ \t]*(?:```|~~~).*$/gm, '') // code fences (the code stays)
    .replace(/^[ \t]*#{1,6}[ \t]+(.*)$/gm, (_, h: string) => `\n${headingText(h)}\n`) // ATX headings
    .replace(/^(.+)\n[ \t]*(?:=+|-+)[ \t]*$/gm, '\n$1\n') // setext headings
    .replace(/^[ \t]*(?:[-*_][ \t]*){3,}$/gm, '') // rules
    .replace(/^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$/gm, '') // table alignment rows
    .replace(/^[ \t]*\[[^[\]\n]+\]:[ \t]+\S.*$/gm, '') // link reference definitions
    .replace(/!\[([^[\]\n]*)\]\([^()\n]*\)/g, '$1') // images: alt text
    .replace(/\[([^[\]\n]+)\]\([^()\n]*\)/g, '$1') // links: their text
    .replace(/\[([^[\]\n]+)\]\[[^[\]\n]*\]/g, '$1') // reference links
    .replace(/<((?:https?|mailto):[^<>\s]+)>/g, '$1') // autolinks
    .replace(/<\/?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?>/g, '') // inline HTML tags
    .replace(/\*\*(?=[^\s*])([^*\n]*[^*\s])\*\*/g, '$1') // **bold**
    .replace(/__(?=[^\s_])([^_\n]*[^_\s])__/g, '$1') // __bold__
    .replace(/(^|[^\w*])\*(?=[^\s*])([^*\n]*[^*\s])\*(?![\w*])/g, '$1$2') // *emphasis*
    .replace(/(^|[^\w_])_(?=[^\s_])([^_\n]*[^_\s])_(?![\w_])/g, '$1$2') // _emphasis_
    .replace(/~~(?=[^\s~])([^~\n]*[^~\s])~~/g, '$1') // strike-through
    .replace(/`{1,3}([^`\n]+)`{1,3}/g, '$1') // inline code
    .replace(/^[ \t]{0,3}>[ \t]?/gm, '') // block quotes
    .replace(/^([ \t]*)[*+][ \t]+/gm, '$1- '); // list bullets
}

/* ------------------------------------------------------------------ all */

function finish(raw: string, method: string, limits: ExtractLimits, alreadyTruncated = false): Extracted {
  const capped = capChars(normalizeText(raw), limits.maxChars);
  const truncated = alreadyTruncated || capped.truncated;
  return { text: capped.text, method: truncated ? `${method} (first ${limits.maxChars} characters)` : method, ...(truncated ? { truncated } : {}) };
}

/** Bounds the input of the text kinds: normalisation only shrinks text, so twice the cap is plenty. */
const preCap = (text: string, limits: ExtractLimits): { text: string; truncated: boolean } =>
  text.length > 2 * limits.maxChars + 1024 ? { text: text.slice(0, 2 * limits.maxChars), truncated: true } : { text, truncated: false };

/**
 * Text of a file whose type detectType decided. Throws validation_failed (path `/file`) for an
 * unreadable or corrupt file or one without text, payload_too_large for a .docx expanding beyond
 * `limits.maxExpandedBytes`. The text is normalised (see normalizeText) and at most
 * `limits.maxChars` long.
 */
export async function extractText(bytes: Buffer, type: FileType, limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS): Promise<Extracted> {
  for (const k of ['maxChars', 'maxPages', 'maxExpandedBytes'] as const) {
    if (!(Number.isSafeInteger(limits[k]) && limits[k] > 0)) throw new RangeError(`limits.${k} must be a positive integer`);
  }
  let out: Extracted;
  if (type === 'pdf') out = await extractPdf(bytes, limits);
  else if (type === 'docx') out = await extractDocx(bytes, limits);
  else {
    const decoded = decodeText(bytes);
    if (decoded === null) throw unreadable('the file is not valid UTF-8 or UTF-16 text');
    if (type === 'json') out = extractJson(bytes, decoded, limits);
    else {
      const { text, truncated } = preCap(decoded, limits);
      if (type === 'html') out = await extractHtml(text, limits);
      else if (type === 'csv') out = extractCsv(text, limits);
      else if (type === 'md') out = finish(stripMarkdown(text), 'md:strip', limits, truncated);
      else out = finish(text, 'txt:plain', limits, truncated);
      if (truncated && !out.truncated) out = { ...out, truncated, method: `${out.method} (first ${limits.maxChars} characters)` };
    }
  }
  if (out.text.trim() === '') {
    const hint = type === 'pdf' ? ' (a scanned PDF needs OCR first)' : '';
    throw unreadable(`the file contains no text${hint}`);
  }
  return out;
}
