/** What every format's extractor takes and gives (see index.ts for the face). */
import { ServiceError } from '../../errors.ts';

export interface ExtractLimits {
  /** Most characters of text a file may give (past them the upload is refused: textTooLong). */
  maxChars: number;
  /** Most PDF pages read (the rest are skipped and `truncated` set). */
  maxPages: number;
  /** Most bytes the decoders may give, summed over a file's zip entries or PDF streams. */
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
  /** Set when the page limit cut a PDF (a character limit refuses the file instead). */
  truncated?: boolean;
}

/** One format: the file's bytes in, its normalised text out; textTooLong past limits.maxChars. */
export type FormatExtractor = (bytes: Buffer, limits: ExtractLimits) => Promise<Extracted>;

/** 400 validation_failed naming `/file`: a file that cannot be read as what it is. */
export const unreadable = (message: string, cause?: unknown): ServiceError =>
  new ServiceError('validation_failed', message, { errors: [{ path: '/file', message }], cause });

/** 413 payload_too_large naming `/file`: the file's decoded content passes limits.maxExpandedBytes. */
export const expandsTooMuch = (what: string, limit: number): ServiceError => {
  const message = `${what} expands to more than the limit of ${limit} bytes (${(limit / 1048576).toFixed(limit % 1048576 === 0 ? 0 : 1)} MiB)`;
  return new ServiceError('payload_too_large', message, { errors: [{ path: '/file', message }], extra: { limit: 'max_expanded_bytes' } });
};

/**
 * 413 payload_too_large naming `/file`: the file's text passes limits.maxChars. Refused rather than
 * cut, so that a stored file is always searchable whole.
 */
export const textTooLong = (limit: number): ServiceError => {
  const message = `the file's text is longer than the limit of ${limit} characters (VSS_EXTRACT_MAX_CHARS): split the file`;
  return new ServiceError('payload_too_large', message, { errors: [{ path: '/file', message }], extra: { limit: 'max_chars' } });
};
