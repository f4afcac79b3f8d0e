/**
 * For tests: every JSON answer serialised with its response schema must say exactly what the
 * handler returned. fast-json-stringify writes declared members only and coerces types (null
 * where a string is declared becomes ""), so a schema that is not complete would silently change
 * answers; with this check every test of the API also checks the schemas. An answer that differs
 * becomes a 500 naming the first difference (the test sees it), never a silently different body.
 */
import { isDeepStrictEqual } from 'node:util';
import type { FastifyInstance } from 'fastify';

const ORIGINAL = Symbol('vss.answerBeforeSerialisation');

/** The first path where `a` and `b` differ, for the failure message. */
function firstDifference(a: unknown, b: unknown, at = ''): string {
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const x = (a as Record<string, unknown>)[k];
      const y = (b as Record<string, unknown>)[k];
      if (!isDeepStrictEqual(x, y)) return firstDifference(x, y, `${at}/${k}`);
    }
  }
  return `${at || '/'}: handler gave ${JSON.stringify(a)?.slice(0, 200)}, schema wrote ${JSON.stringify(b)?.slice(0, 200)}`;
}

export function registerAnswerCheck(app: FastifyInstance): void {
  app.addHook('preSerialization', async (request, _reply, payload) => {
    (request as unknown as Record<symbol, string>)[ORIGINAL] = JSON.stringify(payload);
    return payload;
  });
  app.addHook('onSend', async (request, reply, payload) => {
    const original = (request as unknown as Record<symbol, string | undefined>)[ORIGINAL];
    if (original === undefined || typeof payload !== 'string') return payload;
    const given = JSON.parse(original);
    const written = JSON.parse(payload);
    if (isDeepStrictEqual(given, written)) return payload;
    const message = `${request.method} ${request.routeOptions.url} ${reply.statusCode}: the response schema changed the answer at ${firstDifference(given, written)}`;
    reply.code(500);
    return JSON.stringify({ type: 'https://vss.dev/problems/internal', title: 'Answer does not match its schema', status: 500, detail: message, code: 'internal' });
  });
}
