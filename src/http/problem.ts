/**
 * The one place that maps error codes to HTTP statuses, and every error to an RFC 9457
 * problem body. Nothing else in the code base chooses an error status.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_CODES, invalid, ServiceError, type ErrorCode, type FieldError } from '../errors.ts';
import { toFieldErrors } from './validator.ts';

export const STATUS: Record<ErrorCode, number> = {
  validation_failed: 400,
  malformed_body: 400,
  dimension_mismatch: 400,
  unknown_model: 400,
  unknown_metric: 400,
  unauthenticated: 401,
  forbidden: 403,
  quota_exceeded: 403,
  not_found: 404,
  keyspace_not_found: 404,
  table_not_found: 404,
  vector_not_found: 404,
  user_not_found: 404,
  key_not_found: 404,
  file_not_found: 404,
  method_not_allowed: 405,
  already_exists: 409,
  snapshot_in_progress: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable_file: 422,
  rate_limited: 429,
  request_timeout: 408,
  range_not_satisfiable: 416,
  headers_too_large: 431,
  // nginx's "client closed request": nobody reads it, but the log line says what happened.
  request_aborted: 499,
  internal: 500,
  not_supported: 501,
  not_ready: 503,
  storage_unavailable: 503,
  runtime_unavailable: 503,
  insufficient_storage: 507,
};

export const PROBLEM_TYPE_BASE = 'https://vss.dev/problems/';

const PLUGIN_STATUS: Record<number, ErrorCode> = {
  401: 'unauthenticated',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  416: 'range_not_satisfiable',
  431: 'headers_too_large',
};

/**
 * The raw HTTP answer to a request Node could not parse (bad or oversized headers, a body
 * framed two ways, headers that never finished): no Fastify request exists, so the problem body
 * and its request id are written to the socket here.
 */
export function clientErrorResponse(err: { code?: string }, requestId: string): string {
  const code: ErrorCode = err.code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'malformed_body';
  const status = STATUS[code];
  const detail = code === 'malformed_body' ? 'The request could not be parsed as HTTP.' : ERROR_CODES[code];
  const body = JSON.stringify({ type: `${PROBLEM_TYPE_BASE}${code}`, title: ERROR_CODES[code], status, detail, code, request_id: requestId });
  const reason = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[status] ?? 'Bad Request';
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/problem+json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: ErrorCode;
  request_id: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

/** Classifies anything thrown into a ServiceError; unknown errors become `internal`. */
export function toServiceError(err: unknown): ServiceError {
  if (err instanceof ServiceError) return err;
  const e = err as FastifyError & { type?: string };
  // Validation failures arrive as ServiceErrors (validator.ts); this is a validator of a plugin's own.
  if (e && Array.isArray(e.validation)) return invalid(toFieldErrors(e.validation, e.validationContext ?? 'body'));
  switch (e?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
      return new ServiceError('payload_too_large', e.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new ServiceError('unsupported_media_type', e.message);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ServiceError('malformed_body', e.message);
  }
  if (e instanceof SyntaxError && /forbidden prototype property/.test(e.message)) {
    // secure-json-parse refuses `__proto__` and `constructor.prototype` keys anywhere in a body.
    return new ServiceError('malformed_body', 'The body is valid JSON but uses a key named "__proto__" (or "constructor" holding "prototype"), which is not accepted anywhere in a request.');
  }
  if (e instanceof SyntaxError || e?.statusCode === 400) {
    return new ServiceError('malformed_body', `The body is not valid JSON: ${e.message}`);
  }
  // Plugins' own client errors (@fastify/static: a Range past the end, a path that climbs out;
  // multipart's limits) keep their meaning: a 4xx from the request is never a 500.
  const fromPlugin = typeof e?.statusCode === 'number' ? PLUGIN_STATUS[e.statusCode] : undefined;
  if (fromPlugin) return new ServiceError(fromPlugin, e.message);
  return new ServiceError('internal', 'An unexpected error occurred; the request id identifies it in the server log.', { cause: err });
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  const se = toServiceError(err);
  const status = STATUS[se.code];
  // A refused request whose body was never read: close rather than read (or wait for) the rest.
  if (status >= 400 && status < 500 && !request.raw.complete) reply.header('connection', 'close');
  // A backend's own error (hosts, ports, its wording) goes to the log in full, never into the answer.
  if (status >= 500 && (se.code === 'internal' || se.cause !== undefined)) {
    request.log.error({ err: se.cause ?? err }, se.code === 'internal' ? 'unhandled error' : se.code);
  }
  const body: Problem = {
    type: `${PROBLEM_TYPE_BASE}${se.code}`,
    title: ERROR_CODES[se.code],
    status,
    detail: se.message,
    instance: request.url.split('?')[0],
    code: se.code,
    request_id: String(request.id),
    ...(se.errors ? { errors: se.errors } : {}),
    ...(se.errorsTruncated ? { errors_truncated: true } : {}),
    ...se.extra,
  };
  for (const [k, v] of Object.entries(se.headers ?? {})) reply.header(k, v);
  return reply.code(status).type('application/problem+json').send(boundedProblem(body));
}

/** The largest problem body, in bytes of JSON. */
export const MAX_PROBLEM_BYTES = 64 * 1024;
/** What a problem's own text members keep when the whole would pass MAX_PROBLEM_BYTES. */
const SHORT_TEXT = 2048;

const shorten = (s: unknown): unknown => (typeof s === 'string' && s.length > SHORT_TEXT ? `${s.slice(0, SHORT_TEXT - 1)}…` : s);

/**
 * The problem as JSON of at most MAX_PROBLEM_BYTES: over it, its texts are shortened, then field
 * errors dropped from the end (`errors_truncated` says so), then extra members dropped.
 */
export function boundedProblem(body: Problem): string {
  let json = JSON.stringify(body);
  if (Buffer.byteLength(json) <= MAX_PROBLEM_BYTES) return json;
  const { type, title, status, code, request_id } = body;
  const small: Problem = { type, title, status, detail: shorten(body.detail) as string, instance: shorten(body.instance) as string, code, request_id };
  const errors = body.errors ? [...body.errors] : undefined;
  const fits = (p: Problem): boolean => Buffer.byteLength((json = JSON.stringify(p))) <= MAX_PROBLEM_BYTES;
  const withExtra: Problem = { ...body, ...small, errors, ...(errors ? { errors_truncated: body.errors_truncated } : {}) };
  while (errors && errors.length > 0 && !fits(withExtra)) {
    errors.length = Math.floor(errors.length / 2);
    withExtra.errors_truncated = true;
  }
  if (fits(withExtra)) return json;
  // Extra members are ours and small; past this point one of them is not: the core answer stands.
  fits({ ...small, ...(errors?.length ? { errors, errors_truncated: true } : {}) });
  return json;
}
