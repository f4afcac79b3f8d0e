import { ServiceError } from '../errors.ts';
import { chunkTextAsync, validateChunkOptions, type Chunk, type ChunkTokenizer } from './chunk.ts';
import type { FileType } from './detect.ts';
import type { ExtractPool } from './extract/pool.ts';
import type { ExtractLimits } from './extract/types.ts';

export interface PrepareOptions {
  /** The embedding model (or anything with its tokenize); `maxTokens`, when present, bounds chunkSize. */
  tokenizer: ChunkTokenizer & { maxTokens?: number };
  /** Content tokens per chunk (default DEFAULT_CHUNK_SIZE). */
  chunkSize?: number;
  /** Overlap in tokens (default DEFAULT_CHUNK_OVERLAP, at most chunkSize / 2). */
  overlap?: number;
  /** Where the file is read: extraction never runs on the event loop. */
  extractor: ExtractPool;
  /** Over the pool's own limits, for this file. */
  limits?: Partial<ExtractLimits>;
  /** Aborted when the client leaves: the extraction process is stopped. */
  signal?: AbortSignal;
  /** Most chunks the file may give (default MAX_CHUNKS_PER_FILE). */
  maxChunks?: number;
}

export interface PreparedFile {
  type: FileType;
  /** How the text was extracted (see Extracted.method). */
  method: string;
  text: string;
  chunks: Chunk[];
  /** PDF: pages read. */
  pages?: number;
  totalPages?: number;
  truncated?: boolean;
}

/**
 * Bytes and the client's file name in, text and chunks out: detectType (by content) and
 * extractText in an extraction process (opts.extractor), then chunkText here. Nothing is stored.
 * Throws ServiceError: unsupported_media_type (415), validation_failed (400: empty, unreadable,
 * corrupt, a zip bomb, no text, bad chunk options), payload_too_large (413: zip entries or PDF
 * streams decoding past limits.maxExpandedBytes), unprocessable_file (422: the extraction
 * process's memory or time limit), rate_limited (429: the extraction queue is full).
 * chunkSize/overlap are validated before any extraction work. Chunking gives the event loop a
 * turn every ~20 ms.
 */
export async function prepareFile(bytes: Buffer, fileName: string, opts: PrepareOptions): Promise<PreparedFile> {
  const maxContent = opts.tokenizer.maxTokens !== undefined ? opts.tokenizer.maxTokens - 2 : undefined;
  const { chunkSize, overlap } = validateChunkOptions({ chunkSize: opts.chunkSize, overlap: opts.overlap }, maxContent);
  const { type, extracted } = await opts.extractor.extract(bytes, fileName, { limits: opts.limits, signal: opts.signal });
  const lines = type === 'csv' || type === 'json' ? 'hard' : 'soft';
  const chunks = await chunkTextAsync(extracted.text, opts.tokenizer, { chunkSize, overlap, lines });
  const maxChunks = opts.maxChunks ?? MAX_CHUNKS_PER_FILE;
  if (chunks.length > maxChunks) {
    const message = `the file gives ${chunks.length} chunks at chunk_size ${chunkSize} (overlap ${overlap}); at most ${maxChunks} per file: use a larger chunk_size or split the file`;
    throw new ServiceError('validation_failed', message, { errors: [{ path: '/body/chunk_size', message }] });
  }
  return { type, ...extracted, chunks };
}

/**
 * Chunks (vectors) one upload may make. Every chunk is embedded and held until the one atomic
 * write: 10,000,000 characters at the default chunk size are ~16,000 chunks, while chunk_size 16
 * made 625,000 and 2.6 GB of memory for one 10 MB file.
 */
const MAX_CHUNKS_PER_FILE = 20_000;

const MAX_NAME_BYTES = 255;

/**
 * The client's base name, made safe to store and show: the part after the last `/` or `\`,
 * without control or bidi-override characters, trimmed (spaces and dots at the start, spaces
 * and dots at the end), never `.`/`..`, at most 255 UTF-8 bytes (the extension kept when it can
 * be), `upload` when nothing remains.
 */
export function sanitizeFileName(name: string): string {
  let s = String(name ?? '').normalize('NFC');
  s = s.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, '');
  s = s.split(/[\\/]/).pop() ?? '';
  s = s.replace(/\.{2,}/g, '.').replace(/^[\s.]+/, '').replace(/[\s.]+$/, '');
  if (Buffer.byteLength(s, 'utf8') > MAX_NAME_BYTES) {
    const dot = s.lastIndexOf('.');
    const ext = dot > 0 && s.length - dot <= 16 ? s.slice(dot) : '';
    s = truncateUtf8(s.slice(0, s.length - ext.length), MAX_NAME_BYTES - Buffer.byteLength(ext, 'utf8')).replace(/[\s.]+$/, '') + ext;
  }
  return s === '' ? 'upload' : s;
}

/** The longest prefix of s within maxBytes UTF-8 bytes, not splitting a character. */
function truncateUtf8(s: string, maxBytes: number): string {
  let bytes = 0;
  let out = '';
  for (const ch of s) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > maxBytes) break;
    bytes += n;
    out += ch;
  }
  return out;
}
