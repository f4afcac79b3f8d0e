/**
 * The `response` declarations of routes: success schemas as given, and for each error status the
 * operation can answer, the problem body with the codes of that status (statuses come from
 * problem.ts, the one code-to-status map). Routes name the codes of their own work; the codes
 * every route of a kind can answer (a bad query string, a missing key, the rate limit...) are
 * added when the route is registered (withCommonErrors), so no route can forget them.
 */
import type { RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import type { ErrorCode } from '../errors.ts';
import { STATUS } from './problem.ts';
import { PROBLEM_MEDIA_TYPE, problemSchema } from './schemas/problem.ts';

type ProblemResponse = { description: string; content: { [PROBLEM_MEDIA_TYPE]: { schema: ReturnType<typeof problemSchema> } } };
type Responses = Record<number, unknown>;

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthenticated',
  403: 'Forbidden',
  404: 'Not found',
  409: 'Conflict',
  413: 'Payload too large',
  415: 'Unsupported media type',
  416: 'Range not satisfiable',
  422: 'Unprocessable file',
  429: 'Too many requests',
  499: 'Client closed the request',
  500: 'Internal error',
  501: 'Not implemented',
  503: 'Unavailable',
  507: 'Insufficient storage',
};

function problemResponse(status: number, codes: readonly ErrorCode[]): ProblemResponse {
  const sorted = [...new Set(codes)].sort();
  return { description: `${STATUS_TEXT[status] ?? 'Error'}: ${sorted.join(', ')}`, content: { [PROBLEM_MEDIA_TYPE]: { schema: problemSchema(sorted) } } };
}

/** The codes a problem response already declares. */
const codesOf = (r: unknown): ErrorCode[] => {
  const schema = (r as { content?: Record<string, { schema?: { allOf?: { properties?: { code?: { enum?: ErrorCode[] } } }[] } }> } | undefined)?.content?.[PROBLEM_MEDIA_TYPE]?.schema;
  return schema?.allOf?.[1]?.properties?.code?.enum ?? [];
};

/** `responses` with problem responses for `codes` added (merged into a status already declared). */
function addErrors(responses: Responses, codes: readonly ErrorCode[]): Responses {
  const out: Responses = { ...responses };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(STATUS[code], [...(byStatus.get(STATUS[code]) ?? []), code]);
  for (const [status, list] of byStatus) {
    const existing = out[status];
    // A status answered with its own body (the healthcheck's 503) keeps it.
    if (existing !== undefined && codesOf(existing).length === 0) continue;
    out[status] = problemResponse(status, [...codesOf(existing), ...list]);
  }
  return out;
}

/**
 * A route's responses: its success schemas by status, and problem responses for the error codes
 * its own work can answer.
 */
export function answers<S extends Record<number, TSchema | { description?: string; content: Record<string, { schema: TSchema }> }>>(success: S, codes: readonly ErrorCode[] = []): S {
  return addErrors(success, codes) as S;
}

/** Codes any route of this kind can answer; see the module comment. */
export function commonErrors(route: Pick<RouteOptions, 'method' | 'schema' | 'config'>): ErrorCode[] {
  const config = (route.config ?? {}) as { permission?: string; rateLimit?: unknown; keyspaces?: unknown };
  const schema = (route.schema ?? {}) as { body?: unknown; consumes?: unknown };
  // Every route reads its query string (app.ts refuses one that is not UTF-8) and can fail.
  const codes: ErrorCode[] = ['validation_failed', 'internal'];
  if (schema.body !== undefined || schema.consumes !== undefined) codes.push('malformed_body', 'payload_too_large', 'unsupported_media_type');
  // Authentication looks the key up in storage.
  if (config.permission !== 'public') codes.push('unauthenticated', 'forbidden', 'storage_unavailable');
  if (config.rateLimit !== false) codes.push('rate_limited');
  // The keyspace gate (auth.ts): a keyspace that does not exist or is another tenant's.
  if (config.keyspaces !== undefined) codes.push('keyspace_not_found');
  return codes;
}

/** A route's response declarations with the common codes added; untouched when it declares none. */
export function withCommonErrors(route: Pick<RouteOptions, 'method' | 'schema' | 'config'>): void {
  const schema = route.schema as { response?: Responses; hide?: boolean } | undefined;
  if (!schema?.response) return;
  schema.response = addErrors(schema.response, commonErrors(route));
}
