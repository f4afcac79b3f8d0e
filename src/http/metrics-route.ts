/**
 * `GET /metrics` and the request counters behind it. It needs an administrator key (its labels
 * name every tenant's keyspaces and tables) unless VSS_METRICS_PUBLIC=true.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { Metrics } from '../observability/metrics.ts';
import { answers } from './openapi-responses.ts';

export async function registerMetrics(app: FastifyInstance, metrics: Metrics, opts: { public: boolean }): Promise<void> {
  app.addHook('onResponse', async (request, reply) => {
    // The route pattern, never the raw URL: label values must stay few.
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ route, method: request.method }, reply.elapsedTime / 1000);
  });
  app.get('/metrics', {
    schema: {
      tags: ['system'],
      summary: 'Prometheus metrics',
      response: answers({ 200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: Type.String() } } } }, opts.public ? [] : ['unauthenticated', 'forbidden', 'storage_unavailable']),
    },
    config: { permission: opts.public ? 'public' : 'Admin', rateLimit: false },
    handler: async (_req, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  });
}
