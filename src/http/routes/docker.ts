import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listContainers } from '../../service/containers.ts';
import type { Deps } from '../../service/deps.ts';

export const dockerRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.get('/v1/docker/', {
    schema: { tags: ['operations'], summary: 'Containers of the Docker-compatible runtime at DOCKER_HOST' },
    config: { permission: 'Admin' },
    handler: () => listContainers(deps),
  });
};
