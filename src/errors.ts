/**
 * The one catalogue of error codes. Every layer throws a ServiceError with a code from here;
 * only http/problem.ts turns a code into an HTTP status. Codes are part of the public contract
 * (they appear in problem bodies as `code` and in the `type` URI), so never rename one.
 */
export const ERROR_CODES = {
  validation_failed: 'The request is not valid',
  malformed_body: 'The request body could not be parsed',
  unauthenticated: 'Missing or unknown API key',
  forbidden: 'The API key does not allow this',
  not_found: 'No such resource',
  keyspace_not_found: 'Keyspace not found',
  table_not_found: 'Table not found',
  vector_not_found: 'Vector not found',
  user_not_found: 'User not found',
  key_not_found: 'API key not found',
  file_not_found: 'File not found',
  already_exists: 'Already exists',
  dimension_mismatch: 'Vector dimension does not match the table',
  unknown_model: 'Unknown model',
  unknown_metric: 'Unknown metric',
  payload_too_large: 'Request body too large',
  unprocessable_file: 'The file could not be read within the extraction limits',
  unsupported_media_type: 'Unsupported media or file type',
  method_not_allowed: 'Method not allowed',
  rate_limited: 'Too many requests',
  quota_exceeded: 'Plan limit reached',
  not_ready: 'The service is not ready yet',
  request_aborted: 'The client closed the request',
  request_timeout: 'The request took too long to arrive',
  range_not_satisfiable: 'The requested range is not in the file',
  headers_too_large: 'The request headers are too large',
  storage_unavailable: 'Storage is unavailable',
  insufficient_storage: 'The server has no disk space left for this write',
  runtime_unavailable: 'Container runtime is unavailable',
  snapshot_in_progress: 'A snapshot is being taken',
  not_supported: 'The storage backend does not offer this',
  internal: 'Internal error',
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** One invalid field: `path` is a JSON pointer into the request (e.g. `/vectors/3/vector`). */
export interface FieldError {
  path: string;
  message: string;
}

/**
 * At most this many field errors in one answer. Validators stop looking soon after (a body can
 * hold millions of bad values); an answer that stopped says so with `errors_truncated: true`.
 */
export const MAX_FIELD_ERRORS = 100;
/** The longest path or message of a field error (a member name can be megabytes long). */
const MAX_FIELD_TEXT = 512;

const clip = (s: string): string => (s.length > MAX_FIELD_TEXT ? `${s.slice(0, MAX_FIELD_TEXT - 1)}…` : s);

/**
 * A short `detail` for a list of field errors: the first few, then how many more `errors` holds
 * (the list itself is what clients read; the detail is for people).
 */
const DETAIL_FIELDS = 10;
export function describeFields(errors: readonly FieldError[], truncated = false): string {
  const shown = errors.slice(0, DETAIL_FIELDS).map((e) => `${clip(e.path) || '/'}: ${clip(e.message)}`);
  const more = errors.length - shown.length;
  if (more > 0 || truncated) shown.push(`and ${more > 0 ? more : 'some'} more${truncated ? ' (checking stopped)' : ''}`);
  return shown.join('; ');
}

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly errors?: FieldError[];
  /** True when `errors` is not every bad field: the check stopped at MAX_FIELD_ERRORS. */
  readonly errorsTruncated: boolean;
  /** Extra members for the problem body (e.g. `valid` choices); never secrets. */
  readonly extra?: Record<string, unknown>;
  /** Response headers the error implies (e.g. Retry-After). */
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    opts: { errors?: FieldError[]; truncated?: boolean; extra?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(detail, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ServiceError';
    this.code = code;
    const errors = opts.errors;
    this.errorsTruncated = opts.truncated === true || (errors !== undefined && errors.length > MAX_FIELD_ERRORS);
    this.errors = errors?.slice(0, MAX_FIELD_ERRORS).map((e) => ({ path: clip(e.path), message: clip(e.message) }));
    this.extra = opts.extra;
    this.headers = opts.headers;
  }

  get title(): string {
    return ERROR_CODES[this.code];
  }
}

export const invalid = (errors: FieldError[], detail?: string, opts: { truncated?: boolean } = {}): ServiceError =>
  new ServiceError('validation_failed', detail ?? describeFields(errors, opts.truncated), { errors, truncated: opts.truncated });

/** A bad field whose problem has its own code (unknown_model, dimension_mismatch...). */
export type CodedFieldError = FieldError & { code?: ErrorCode };

/**
 * One answer naming every bad field. When all of them carry the same specific code, the answer
 * has that code (and `extra[code]` as extra members); a mix is validation_failed.
 */
export function invalidFields(errors: CodedFieldError[], extra: Partial<Record<ErrorCode, Record<string, unknown>>> = {}, opts: { truncated?: boolean } = {}): ServiceError {
  const codes = new Set(errors.map((e) => e.code ?? 'validation_failed'));
  const code: ErrorCode = codes.size === 1 ? [...codes][0] : 'validation_failed';
  const plain = errors.map(({ path, message }) => ({ path, message }));
  return new ServiceError(code, describeFields(plain, opts.truncated), { errors: plain, truncated: opts.truncated, extra: extra[code] });
}

export const isServiceError = (e: unknown): e is ServiceError => e instanceof ServiceError;

/** Error codes (errno, SQLite) that say the disk or the user's disk quota is full. */
const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT', 'SQLITE_FULL']);

/** True for a file system or SQLite error that says the disk (or quota) is full. */
export const isDiskFull = (e: unknown): boolean => {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && DISK_FULL_CODES.has(code);
};

/** The answer to a write a full disk refused: nothing of it was kept, and freeing space is the cure. */
export const diskFull = (cause: unknown): ServiceError =>
  new ServiceError('insufficient_storage', 'The data directory is full: nothing of this write was stored. Writes work again once space is freed.', { cause });
