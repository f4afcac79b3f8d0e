import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { environment, health, root, systemInfo } from '../../service/system.ts';
import { answers } from '../openapi-responses.ts';
import { Environment, HealthAnswer, RootAnswer, SystemInfo } from '../schemas/index.ts';

export const systemRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.get('/v1', { schema: { tags: ['system'], summary: 'Service name, version and API document', response: answers({ 200: RootAnswer }) }, config: { permission: 'public' }, handler: async () => root() });
  app.get('/v1/healthcheck/', {
    schema: { tags: ['system'], summary: '200 when storage and model are ready, 503 otherwise', response: answers({ 200: HealthAnswer, 503: HealthAnswer }) },
    config: { permission: 'public' },
    handler: async (_req, reply) => {
      const h = await health(deps);
      return reply.code(h.ok ? 200 : 503).send(h.body);
    },
  });
  app.get('/v1/system/info', { schema: { tags: ['system'], summary: 'Host and process information', response: answers({ 200: SystemInfo }) }, config: { permission: 'Admin' }, handler: async () => systemInfo() });
  app.get('/v1/env/', { schema: { tags: ['system'], summary: 'Non-secret settings', response: answers({ 200: Environment }) }, config: { permission: 'Read' }, handler: async () => environment(deps) });
};
