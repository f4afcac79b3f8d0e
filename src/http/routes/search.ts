import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { search } from '../../service/search.ts';
import { SearchBody } from '../schemas/index.ts';

export const searchRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/search/', {
    schema: { tags: ['search'], summary: 'Semantic search by text (or by vector), two-stage', body: SearchBody },
    config: { permission: 'Read', keyspaces: (r) => [(r.body as SearchBody).keyspace] },
    handler: (req) => search(deps, req.body),
  });
};
