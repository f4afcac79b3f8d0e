/**
 * The one authorisation mechanism. Every route declares in its `config`:
 *   - `permission`: 'public' (no key), the least of 'Read' | 'Write' | 'All' it needs, or
 *     'Admin' (an `All` key over every keyspace: users, other tenants, the host);
 *   - `keyspaces`: optional, which keyspace names the request touches (read after parsing).
 * The key is checked in onRequest, before the body is read or parsed; permission right after;
 * keyspace reach in preHandler, after validation and before the handler does any work. Only
 * requests whose key failed are limited (auth-failures.ts): a valid key always gets through.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ServiceError } from '../errors.ts';
import type { Permission, Storage } from '../storage/api.ts';
import { authorizeKeyspace, requireAdministrator, requirePermission, type Caller } from '../service/caller.ts';
import { authenticate } from '../service/keys.ts';
import { AuthFailures } from './auth-failures.ts';

export type RouteAccess = 'public' | Permission | 'Admin';

declare module 'fastify' {
  interface FastifyContextConfig {
    permission?: RouteAccess;
    /** Names of the keyspaces the request touches, from its parsed body or query. */
    keyspaces?: (request: FastifyRequest) => (string | undefined)[];
  }
  interface FastifyRequest {
    caller: Caller | null;
  }
}

/**
 * The key from `Authorization: Bearer <key>`, which OpenAI's clients send (`api_key=`), so that
 * they can use /v1/embeddings as they are. `x-api-key` wins when both are given.
 */
function bearerToken(header: string | undefined): string | undefined {
  const m = header === undefined ? null : /^Bearer +(\S+)$/i.exec(header);
  return m ? m[1] : undefined;
}

/** The caller of an authenticated route; throws if used on a public one (a programming error). */
export function callerOf(request: FastifyRequest): Caller {
  if (request.caller === null) throw new ServiceError('unauthenticated', 'A valid API key is required in the x-api-key header.');
  return request.caller;
}

// A named function: fastify-plugin names an anonymous one after the file in a stack trace it
// takes (slow once source-mapped, and the bundle's file name rather than this one's).
export const authPlugin = fp(async function auth(
  app: FastifyInstance,
  opts: { storage: Storage; publicPrefixes?: string[]; failuresPerMinute: { perAddress: number; global: number } },
) {
  // Routes registered by third-party plugins (the docs UI) cannot carry our route config.
  const publicPrefixes = opts.publicPrefixes ?? [];
  const failures = new AuthFailures(opts.failuresPerMinute);
  app.decorateRequest('caller', null);

  app.addHook('onRequest', async (request) => {
    const access = request.routeOptions.config?.permission;
    if (access === 'public' || publicPrefixes.some((p) => request.routeOptions.url?.startsWith(p))) return;
    // Routes without a declaration (including unknown paths) need at least a valid key.
    const caller = await authenticate(opts.storage, request.headers['x-api-key'] ?? bearerToken(request.headers.authorization)).catch((e: unknown) => {
      const wait = e instanceof ServiceError && e.code === 'unauthenticated' ? failures.fail(request.ip) : 0;
      if (wait > 0) {
        throw new ServiceError('rate_limited', `Too many requests with an invalid key; retry in ${wait} s.`, {
          headers: { 'retry-after': String(wait) },
        });
      }
      throw e;
    });
    request.caller = caller;
    // Unknown paths need any valid key (then 404); declared routes default to the strictest level.
    const need = access ?? (request.is404 ? 'Read' : 'Admin');
    if (need === 'Admin') requireAdministrator(caller);
    else requirePermission(caller, need);
  });

  app.addHook('preHandler', async (request) => {
    const pick = request.routeOptions.config?.keyspaces;
    if (!pick || request.caller === null) return;
    for (const name of new Set(pick(request))) {
      if (name === undefined) continue;
      const ks = await authorizeKeyspace(opts.storage, request.caller, name);
      // Another tenant's keyspace is reported exactly as a missing one.
      if (ks === null && (await opts.storage.getKeyspace(name)) !== null) {
        throw new ServiceError('keyspace_not_found', `Keyspace "${name}" does not exist.`);
      }
    }
  });
});
