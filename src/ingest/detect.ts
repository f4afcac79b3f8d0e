import { ServiceError } from '../errors.ts';

/** The kinds of file the ingestion layer reads. */
export type FileType = 'pdf' | 'docx' | 'html' | 'json' | 'csv' | 'md' | 'txt';
export const FILE_TYPES: readonly FileType[] = ['pdf', 'docx', 'html', 'json', 'csv', 'md', 'txt'];

const unsupported = (detail: string): ServiceError =>
  new ServiceError('unsupported_media_type', detail, { extra: { supported: [...FILE_TYPES] } });

export const emptyFile = (): ServiceError =>
  new ServiceError('validation_failed', 'the file is empty', { errors: [{ path: '/file', message: 'the file is empty' }] });

/** Extension of a file name, lower case, without the dot ('' when none). */
export const extensionOf = (fileName: string): string => {
  const base = fileName.split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
};

const startsWith = (b: Buffer, sig: number[], at = 0): boolean => b.length >= at + sig.length && sig.every((x, i) => b[at + i] === x);

/** Well-known binary formats, named so that the 415 says what was sent. */
const BINARY_MAGIC: Array<[string, number[], number?]> = [
  ['PNG image', [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
  ['JPEG image', [0xff, 0xd8, 0xff]],
  ['GIF image', [0x47, 0x49, 0x46, 0x38]],
  ['WebP/RIFF media', [0x52, 0x49, 0x46, 0x46]],
  ['ELF executable', [0x7f, 0x45, 0x4c, 0x46]],
  ['Windows executable', [0x4d, 0x5a]],
  ['Mach-O executable', [0xcf, 0xfa, 0xed, 0xfe]],
  ['Mach-O executable', [0xfe, 0xed, 0xfa, 0xcf]],
  ['gzip archive', [0x1f, 0x8b]],
  ['7-Zip archive', [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]],
  ['RAR archive', [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07]],
  ['bzip2 archive', [0x42, 0x5a, 0x68]],
  ['xz archive', [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
  ['zstd archive', [0x28, 0xb5, 0x2f, 0xfd]],
  ['legacy Office (OLE2) document', [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]],
  ['WebAssembly module', [0x00, 0x61, 0x73, 0x6d]],
  ['SQLite database', [...Buffer.from('SQLite format 3\0')]],
];

/**
 * A signature of printable characters ("MZ", "GIF8", "RIFF") also starts ordinary text ("MZ-80K,
 * …" in a CSV): it names a binary format only when the file is not text.
 */
const isPrintable = (sig: number[]): boolean => sig.every((b) => b >= 0x20 && b < 0x7f);

const PDF_HEADER = Buffer.from('%PDF-');
const PDF_EOF = Buffer.from('%%EOF');

const ZIP_LOCAL = [0x50, 0x4b, 0x03, 0x04];
const ZIP_EMPTY = [0x50, 0x4b, 0x05, 0x06];

/**
 * Names in a zip's central directory, read synchronously and bounded (at most `maxEntries`
 * names). Returns null when no valid end-of-central-directory record is found.
 */
export function zipEntryNames(b: Buffer, maxEntries = 10_000): string[] | null {
  // End of central directory: 22 bytes + a comment of at most 65535 bytes, at the end.
  const stop = Math.max(0, b.length - 22 - 0xffff);
  for (let i = b.length - 22; i >= stop; i--) {
    if (b.readUInt32LE(i) !== 0x06054b50) continue;
    if (i + 22 + b.readUInt16LE(i + 20) !== b.length) continue;
    let count = b.readUInt16LE(i + 10);
    let offset = b.readUInt32LE(i + 16);
    if (count === 0xffff || offset === 0xffffffff) {
      // Zip64: the locator sits just before the EOCD record.
      const loc = i - 20;
      if (loc < 0 || b.readUInt32LE(loc) !== 0x07064b50) return null;
      const z = Number(b.readBigUInt64LE(loc + 8));
      if (z < 0 || z + 56 > b.length || b.readUInt32LE(z) !== 0x06064b50) return null;
      count = Number(b.readBigUInt64LE(z + 32));
      offset = Number(b.readBigUInt64LE(z + 48));
    }
    const names: string[] = [];
    let p = offset;
    for (let n = 0; n < Math.min(count, maxEntries); n++) {
      if (p + 46 > b.length || b.readUInt32LE(p) !== 0x02014b50) return null;
      const nameLen = b.readUInt16LE(p + 28);
      const extraLen = b.readUInt16LE(p + 30);
      const commentLen = b.readUInt16LE(p + 32);
      if (p + 46 + nameLen > b.length) return null;
      names.push(b.toString('utf8', p + 46, p + 46 + nameLen));
      p += 46 + nameLen + extraLen + commentLen;
    }
    return names;
  }
  return null;
}

const DOCX_MAIN = 'word/document.xml';

/** Decoded text of a text file, or null when the bytes are not text (invalid UTF-8, NULs, control bytes). */
export function decodeText(bytes: Buffer): string | null {
  let text: string;
  try {
    if (startsWith(bytes, [0xef, 0xbb, 0xbf])) text = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(3));
    else if (startsWith(bytes, [0xff, 0xfe])) text = new TextDecoder('utf-16le', { fatal: true }).decode(bytes.subarray(2));
    else if (startsWith(bytes, [0xfe, 0xff])) text = new TextDecoder('utf-16be', { fatal: true }).decode(bytes.subarray(2));
    else {
      if (bytes.indexOf(0) !== -1) return null;
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    }
  } catch {
    return null;
  }
  if (text.includes('\u0000')) return null;
  // Control characters other than tab, LF, VT, FF, CR and ESC: a few are tolerated (stray bytes
  // in old text files), more than 1 in 1000 characters means the content is not text.
  const sample = text.length > 1 << 20 ? text.slice(0, 1 << 20) : text;
  const controls = sample.match(/[\u0001-\u0008\u000e-\u001a\u001c-\u001f\u007f]/g)?.length ?? 0;
  if (controls > Math.max(2, sample.length / 1000)) return null;
  return text;
}

/* A parse done while detecting is kept for extraction (same Buffer object), so a large JSON
 * document is parsed once. */
const parsedJson = new WeakMap<Buffer, unknown>();

/** The value parsed by detectType for these bytes, if any. */
export const cachedJson = (bytes: Buffer): { value: unknown } | undefined =>
  parsedJson.has(bytes) ? { value: parsedJson.get(bytes) } : undefined;

/** JSON text: an object or array document, or JSON Lines (every non-empty line an object or array). */
export function parseJsonText(text: string): { value: unknown } | undefined {
  const t = text.trim();
  const first = t[0];
  const last = t[t.length - 1];
  if (!((first === '{' && last === '}') || (first === '[' && last === ']'))) return undefined;
  try {
    return { value: JSON.parse(t) };
  } catch {
    /* maybe JSON Lines */
  }
  const lines = t.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (lines.length < 2) return undefined;
  const values: unknown[] = [];
  for (const line of lines) {
    const s = line.trim();
    if (s[0] !== '{' && s[0] !== '[') return undefined;
    try {
      values.push(JSON.parse(s));
    } catch {
      return undefined;
    }
  }
  return { value: values };
}

const HTML_START = /^<(?:!doctype\s+html|html|head|body)[\s>]/i;
const HTML_TAG = /<(?:head|body|title|meta|div|span|p|br|h[1-6]|ul|ol|li|table|tr|td|a\s+href|article|section|script|style)\b[^<>]*>/gi;

/** Skips leading whitespace, an XML declaration and comments (a loop: no regex backtracking). */
function skipProlog(s: string): string {
  let t = s.trimStart();
  for (;;) {
    if (t.startsWith('<?xml')) {
      const end = t.indexOf('?>');
      if (end < 0) return t;
      t = t.slice(end + 2).trimStart();
    } else if (t.startsWith('<!--')) {
      const end = t.indexOf('-->', 4);
      if (end < 0) return t;
      t = t.slice(end + 3).trimStart();
    } else return t;
  }
}

function looksLikeHtml(text: string, ext: string): boolean {
  const head = text.slice(0, 1 << 16).trimStart();
  if (HTML_START.test(skipProlog(head))) return true;
  const tags = head.match(HTML_TAG)?.length ?? 0;
  if (['html', 'htm', 'xhtml', 'shtml'].includes(ext)) return tags > 0;
  // Content that starts with a tag and is full of typical HTML tags is HTML whatever its name,
  // unless the name says Markdown (which may embed HTML).
  return head.startsWith('<') && tags >= 3 && !['md', 'markdown'].includes(ext);
}

/**
 * The type of an uploaded file, decided by its content; the name's extension only picks between
 * text kinds (csv / md / txt). Throws unsupported_media_type for anything that is neither PDF,
 * a Word document nor text, and validation_failed for an empty file.
 */
export function detectType(bytes: Buffer, fileName: string): FileType {
  if (bytes.length === 0) throw emptyFile();
  const ext = extensionOf(fileName);

  // PDF: the header may follow a little junk (the spec allows it within the first 1024 bytes);
  // text that merely mentions "%PDF-" early is not a PDF unless it also ends like one.
  const header = bytes.subarray(0, 1024).indexOf(PDF_HEADER);
  if (header === 0 || (header > 0 && bytes.subarray(-1024).indexOf(PDF_EOF) !== -1)) return 'pdf';

  if (startsWith(bytes, ZIP_LOCAL) || startsWith(bytes, ZIP_EMPTY)) {
    const names = zipEntryNames(bytes);
    if (names ? names.includes(DOCX_MAIN) : bytes.indexOf(DOCX_MAIN) !== -1) return 'docx'; // a damaged docx fails in extraction (400)
    throw unsupported('a zip archive that is not a Word (.docx) document is not supported');
  }
  const text = decodeText(bytes);
  for (const [what, sig] of BINARY_MAGIC) {
    if (startsWith(bytes, sig) && (text === null || !isPrintable(sig))) throw unsupported(`${what} files are not supported`);
  }
  if (text === null) throw unsupported('binary content: only PDF, Word (.docx) and UTF-8/UTF-16 text files are supported');
  if (text.trim() === '') throw emptyFile();

  if (looksLikeHtml(text, ext)) return 'html';
  const json = parseJsonText(text);
  if (json) {
    parsedJson.set(bytes, json.value);
    return 'json';
  }
  if (ext === 'csv' || ext === 'tsv') return 'csv';
  if (['md', 'markdown', 'mdown', 'mkd', 'mkdn'].includes(ext)) return 'md';
  return 'txt';
}
