import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { autoprovision, createKeyspace, createTable, listKeyspaces, updateTable } from '../../service/keyspaces.ts';
import { callerOf } from '../auth.ts';
import { answers } from '../openapi-responses.ts';
import { KeyspaceAnswer, KeyspaceCreateBody, KeyspaceList, TableAnswer, TableCreateBody, TableUpdateAnswer, TableUpdateBody } from '../schemas/index.ts';

export const keyspaceRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/keyspaces/create', {
    schema: { tags: ['keyspaces'], summary: 'Create a keyspace (named, or with a unique name) with a `vector` table', body: KeyspaceCreateBody, response: answers({ 200: KeyspaceAnswer }, ['already_exists', 'quota_exceeded', 'insufficient_storage']) },
    // The key's reach over the new name is checked by createKeyspace: a name another tenant holds
    // is 409 there, not the 404 the keyspace gate gives names it cannot reach.
    config: { permission: 'Write' },
    handler: (req) => createKeyspace(deps, callerOf(req), req.body ?? {}),
  });
  app.post('/v1/keyspaces/autoprovision', {
    schema: { tags: ['keyspaces'], summary: 'Create a uniquely named keyspace with a `vector` table', response: answers({ 200: KeyspaceAnswer }, ['quota_exceeded', 'insufficient_storage']) },
    config: { permission: 'Write' },
    handler: (req) => autoprovision(deps, callerOf(req)),
  });
  const list = { schema: { tags: ['keyspaces'], summary: "The caller's keyspaces with their tables", response: answers({ 200: KeyspaceList }) }, config: { permission: 'Read' as const } };
  app.post('/v1/keyspaces/list', { ...list, handler: (req) => listKeyspaces(deps, callerOf(req)) });
  app.get('/v1/keyspaces/list', { ...list, handler: (req) => listKeyspaces(deps, callerOf(req)) });
  app.post('/v1/keyspaces/table/create', {
    schema: { tags: ['keyspaces'], summary: 'Create a table with a dimension and metric', body: TableCreateBody, response: answers({ 200: TableAnswer }, ['already_exists', 'unknown_model', 'unknown_metric', 'quota_exceeded', 'insufficient_storage']) },
    config: { permission: 'Write', keyspaces: (r) => [(r.body as TableCreateBody).keyspace] },
    handler: (req) => createTable(deps, req.body),
  });
  app.post('/v1/keyspaces/table/update', {
    schema: { tags: ['keyspaces'], summary: "Change a table's default TTL", body: TableUpdateBody, response: answers({ 200: TableUpdateAnswer }, ['table_not_found']) },
    config: { permission: 'Write', keyspaces: (r) => [(r.body as TableUpdateBody).keyspace] },
    handler: (req) => updateTable(deps, req.body),
  });
};
