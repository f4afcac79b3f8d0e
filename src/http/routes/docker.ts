import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listContainers } from '../../service/containers.ts';
import type { Deps } from '../../service/deps.ts';
import { answers } from '../openapi-responses.ts';
import { ContainerList } from '../schemas/index.ts';

export const dockerRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.get('/v1/docker/', {
    schema: { tags: ['operations'], summary: 'Containers of the Docker-compatible runtime at DOCKER_HOST', response: answers({ 200: ContainerList }, ['runtime_unavailable']) },
    config: { permission: 'Admin' },
    handler: () => listContainers(deps),
  });
};
