import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { autoprovision, createKeyspace, createTable, listKeyspaces } from '../../service/keyspaces.ts';
import { callerOf } from '../auth.ts';
import { KeyspaceCreateBody, TableCreateBody } from '../schemas/index.ts';

export const keyspaceRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/keyspaces/create', {
    schema: { tags: ['keyspaces'], summary: 'Create a keyspace (named, or with a unique name) with a `vector` table', body: KeyspaceCreateBody },
    // The key's reach over the new name is checked by createKeyspace: a name another tenant holds
    // is 409 there, not the 404 the keyspace gate gives names it cannot reach.
    config: { permission: 'Write' },
    handler: (req) => createKeyspace(deps, callerOf(req), req.body ?? {}),
  });
  app.post('/v1/keyspaces/autoprovision', {
    schema: { tags: ['keyspaces'], summary: 'Create a uniquely named keyspace with a `vector` table' },
    config: { permission: 'Write' },
    handler: (req) => autoprovision(deps, callerOf(req)),
  });
  const list = { schema: { tags: ['keyspaces'], summary: "The caller's keyspaces with their tables" }, config: { permission: 'Read' as const } };
  app.post('/v1/keyspaces/list', { ...list, handler: (req) => listKeyspaces(deps, callerOf(req)) });
  app.get('/v1/keyspaces/list', { ...list, handler: (req) => listKeyspaces(deps, callerOf(req)) });
  app.post('/v1/keyspaces/table/create', {
    schema: { tags: ['keyspaces'], summary: 'Create a table with a dimension and metric', body: TableCreateBody },
    config: { permission: 'Write', keyspaces: (r) => [(r.body as TableCreateBody).keyspace] },
    handler: (req) => createTable(deps, req.body),
  });
};
