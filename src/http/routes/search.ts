import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { search } from '../../service/search.ts';
import { answers } from '../openapi-responses.ts';
import { SearchAnswer, SearchBody } from '../schemas/index.ts';

export const searchRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/search/', {
    schema: { tags: ['search'], summary: 'Semantic search by text (or by vector), two-stage', body: SearchBody, response: answers({ 200: SearchAnswer }, ['table_not_found', 'unknown_model', 'unknown_metric', 'dimension_mismatch', 'not_ready']) },
    config: { permission: 'Read', keyspaces: (r) => [(r.body as SearchBody).keyspace] },
    handler: (req) => search(deps, req.body),
  });
};
