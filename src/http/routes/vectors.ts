import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { countVectors, deleteVectors, getVector, listVectors, writeBatch, writeVector } from '../../service/vectors.ts';
import { VectorBatchBody, VectorCountBody, VectorDeleteBody, VectorGetBody, VectorListBody, VectorWriteBody } from '../schemas/index.ts';

const bodyKeyspace = (r: { body: unknown }) => [(r.body as { keyspace: string }).keyspace];

export const vectorRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/vector/write', {
    schema: { tags: ['vectors'], summary: 'Upsert one vector (or a text to embed)', body: VectorWriteBody },
    config: { permission: 'Write', keyspaces: bodyKeyspace },
    handler: (req) => writeVector(deps, req.body),
  });
  app.post('/v1/vector/batch', {
    schema: { tags: ['vectors'], summary: 'Upsert many vectors, all or nothing', body: VectorBatchBody },
    config: { permission: 'Write', keyspaces: bodyKeyspace },
    handler: (req) => writeBatch(deps, req.body),
  });
  app.post('/v1/vector/get', {
    schema: { tags: ['vectors'], summary: 'Read one vector by key', body: VectorGetBody },
    config: { permission: 'Read', keyspaces: bodyKeyspace },
    handler: (req) => getVector(deps, req.body),
  });
  app.post('/v1/vector/delete', {
    schema: { tags: ['vectors'], summary: 'Delete vectors by keys or by metadata filter', body: VectorDeleteBody },
    config: { permission: 'Write', keyspaces: bodyKeyspace },
    handler: (req) => deleteVectors(deps, req.body),
  });
  app.post('/v1/vector/list', {
    schema: { tags: ['vectors'], summary: 'Page through a table in key order (export)', body: VectorListBody },
    config: { permission: 'Read', keyspaces: bodyKeyspace },
    handler: (req) => listVectors(deps, req.body),
  });
  app.post('/v1/vector/count', {
    schema: { tags: ['vectors'], summary: 'Count vectors, optionally matching a filter', body: VectorCountBody },
    config: { permission: 'Read', keyspaces: bodyKeyspace },
    handler: (req) => countVectors(deps, req.body),
  });
};
