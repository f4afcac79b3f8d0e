/**
 * Per-user request rate limits from the plan (@fastify/rate-limit). It runs after authentication
 * (its hooks are route-level, ours app-level), so it counts per user, across all of the user's
 * keys (more keys buy no more requests); requests without a key (the exempt routes) count per
 * address. Counters live in this process: behind a load balancer each process enforces the
 * limit on its own share.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../errors.ts';
import type { Deps } from '../service/deps.ts';
import { planOf } from '../service/quota.ts';

const ANONYMOUS_PER_MINUTE = 300;

export async function registerRateLimit(app: FastifyInstance, { config, storage }: Deps): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    timeWindow: 60_000,
    keyGenerator: (req: FastifyRequest) => (req.caller ? `user:${req.caller.userId}` : `ip:${req.ip}`),
    max: async (req: FastifyRequest) => {
      if (!req.caller) return ANONYMOUS_PER_MINUTE;
      const user = await storage.getUser(req.caller.userId);
      return user ? planOf(config, user).requestsPerMinute : ANONYMOUS_PER_MINUTE;
    },
    errorResponseBuilder: (_req, ctx) =>
      new ServiceError('rate_limited', `Rate limit of ${ctx.max} requests per minute reached; retry in ${ctx.after}.`, {
        headers: { 'retry-after': String(Math.max(1, Math.ceil(ctx.ttl / 1000))) },
        extra: { limit: ctx.max },
      }),
  });
}
