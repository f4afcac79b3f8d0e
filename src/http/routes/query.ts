import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { DEFAULT_LIMITS } from '../../config/config.ts';
import type { Deps } from '../../service/deps.ts';
import { query } from '../../service/query.ts';
import { callerOf } from '../auth.ts';
import { answers } from '../openapi-responses.ts';
import { NAME_PATTERN, QueryAnswer } from '../schemas/index.ts';

export const QueryBody = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: DEFAULT_LIMITS.queryBytes, description: 'Query text' }),
    selectedContainerId: Type.Optional(Type.String({ pattern: NAME_PATTERN, description: 'The keyspace (container) to search; default: the default keyspace' })),
    final_top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: DEFAULT_LIMITS.maxFinalTopK, description: 'Matches returned over all tables (default 5)' })),
    model_name: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Embedding model (default all-MiniLM-L6-v2)' })),
  },
  { additionalProperties: false },
);
export type QueryBody = Static<typeof QueryBody>;

export const queryRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/query/', {
    schema: { tags: ['search'], summary: 'Search every table of one keyspace, matches merged by score', body: QueryBody, response: answers({ 200: QueryAnswer }, ['unknown_model', 'not_ready']) },
    config: { permission: 'Read', keyspaces: (r) => [(r.body as QueryBody).selectedContainerId ?? deps.config.defaultKeyspace] },
    handler: (req) => query(deps, callerOf(req), req.body),
  });
};
