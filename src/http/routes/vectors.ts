import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { countVectors, deleteVectors, getVector, listVectors, writeBatch, writeVector } from '../../service/vectors.ts';
import { answers } from '../openapi-responses.ts';
import { BatchAnswer, CountAnswer, DeleteAnswer, VectorAnswer, VectorPage, WriteAnswer, VectorBatchBody, VectorCountBody, VectorDeleteBody, VectorGetBody, VectorListBody, VectorWriteBody } from '../schemas/index.ts';

/** Writes embed texts (a model may be unknown or loading), create tables and count against the plan. */
const WRITE_ERRORS = ['dimension_mismatch', 'unknown_model', 'not_ready', 'quota_exceeded', 'insufficient_storage'] as const;

const bodyKeyspace = (r: { body: unknown }) => [(r.body as { keyspace: string }).keyspace];

export const vectorRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/vector/write', {
    schema: { tags: ['vectors'], summary: 'Upsert one vector (or a text to embed)', body: VectorWriteBody, response: answers({ 200: WriteAnswer }, WRITE_ERRORS) },
    config: { permission: 'Write', keyspaces: bodyKeyspace },
    handler: (req) => writeVector(deps, req.body),
  });
  app.post('/v1/vector/batch', {
    schema: { tags: ['vectors'], summary: 'Upsert many vectors, all or nothing', body: VectorBatchBody, response: answers({ 200: BatchAnswer }, WRITE_ERRORS) },
    config: { permission: 'Write', keyspaces: bodyKeyspace },
    handler: (req) => writeBatch(deps, req.body),
  });
  app.post('/v1/vector/get', {
    schema: { tags: ['vectors'], summary: 'Read one vector by key', body: VectorGetBody, response: answers({ 200: VectorAnswer }, ['table_not_found', 'vector_not_found']) },
    config: { permission: 'Read', keyspaces: bodyKeyspace },
    handler: (req) => getVector(deps, req.body),
  });
  app.post('/v1/vector/delete', {
    schema: { tags: ['vectors'], summary: 'Delete vectors by keys or by metadata filter', body: VectorDeleteBody, response: answers({ 200: DeleteAnswer }, ['table_not_found', 'insufficient_storage']) },
    config: { permission: 'Write', keyspaces: bodyKeyspace },
    handler: (req) => deleteVectors(deps, req.body),
  });
  app.post('/v1/vector/list', {
    schema: { tags: ['vectors'], summary: 'Page through a table in key order (export)', body: VectorListBody, response: answers({ 200: VectorPage }, ['table_not_found']) },
    config: { permission: 'Read', keyspaces: bodyKeyspace },
    handler: (req) => listVectors(deps, req.body),
  });
  app.post('/v1/vector/count', {
    schema: { tags: ['vectors'], summary: 'Count vectors, optionally matching a filter', body: VectorCountBody, response: answers({ 200: CountAnswer }, ['table_not_found']) },
    config: { permission: 'Read', keyspaces: bodyKeyspace },
    handler: (req) => countVectors(deps, req.body),
  });
};
