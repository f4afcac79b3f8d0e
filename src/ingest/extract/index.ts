/**
 * Text extraction, one file per format behind one interface (FormatExtractor). extractText runs
 * in the calling thread: the service calls it only inside an extraction process (pool.ts), never
 * on the event loop.
 */
import type { FileType } from '../detect.ts';
import { extractCsv } from './csv.ts';
import { extractDocx } from './docx.ts';
import { extractHtml } from './html.ts';
import { extractJson } from './json.ts';
import { extractMarkdown, extractPlain } from './markdown.ts';
import { extractPdf } from './pdf.ts';
import { DEFAULT_EXTRACT_LIMITS, unreadable, type Extracted, type ExtractLimits, type FormatExtractor } from './types.ts';

export { parseCsv, looksLikeHeader, sniffDelimiter } from './csv.ts';
export { checkDocxZip, MAX_COMPRESSION_RATIO, MAX_ZIP_ENTRIES } from './docx.ts';
export { htmlStackWork, MAX_HTML_STACK_WORK } from './html.ts';
export { flattenJson } from './json.ts';
export { stripMarkdown } from './markdown.ts';
export { normalizeText } from './text.ts';
export { DEFAULT_EXTRACT_LIMITS, type Extracted, type ExtractLimits, type FormatExtractor } from './types.ts';

const EXTRACTORS: Record<FileType, FormatExtractor> = {
  pdf: extractPdf,
  docx: extractDocx,
  html: extractHtml,
  json: extractJson,
  csv: extractCsv,
  md: extractMarkdown,
  txt: extractPlain,
};

/**
 * Text of a file whose type detectType decided. Throws validation_failed (path `/file`) for an
 * unreadable or corrupt file or one without text, payload_too_large when its zip entries or PDF
 * streams decode to more than `limits.maxExpandedBytes`. The text is normalised (see
 * normalizeText) and at most `limits.maxChars` long.
 */
export async function extractText(bytes: Buffer, type: FileType, limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS): Promise<Extracted> {
  for (const k of ['maxChars', 'maxPages', 'maxExpandedBytes'] as const) {
    if (!(Number.isSafeInteger(limits[k]) && limits[k] > 0)) throw new RangeError(`limits.${k} must be a positive integer`);
  }
  const out = await EXTRACTORS[type](bytes, limits);
  if (out.text.trim() === '') {
    const hint = type === 'pdf' ? ' (a scanned PDF needs OCR first)' : '';
    throw unreadable(`the file contains no text${hint}`);
  }
  return out;
}
