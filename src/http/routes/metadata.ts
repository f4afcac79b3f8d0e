import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { writeMetadata, writeMetadataBatch } from '../../service/metadata.ts';
import { answers } from '../openapi-responses.ts';
import { MetadataBatchAnswer, MetadataBatchBody, MetadataRecordAnswer, MetadataRecordBody } from '../schemas/index.ts';

const records = (body: MetadataBatchBody) => (Array.isArray(body) ? body : body.records);

export const metadataRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/metadata/write', {
    schema: { tags: ['metadata'], summary: 'Upsert the metadata record of one source', body: MetadataRecordBody, response: answers({ 200: MetadataRecordAnswer }, ['insufficient_storage']) },
    config: { permission: 'Write', keyspaces: (r) => [(r.body as MetadataRecordBody).keyspace] },
    handler: (req) => writeMetadata(deps, req.body),
  });
  app.post('/v1/metadata/batch', {
    schema: { tags: ['metadata'], summary: 'Upsert many metadata records, all or nothing', body: MetadataBatchBody, response: answers({ 200: MetadataBatchAnswer }, ['insufficient_storage']) },
    config: { permission: 'Write', keyspaces: (r) => records(r.body as MetadataBatchBody).map((x) => x.keyspace) },
    handler: (req) => writeMetadataBatch(deps, records(req.body), Array.isArray(req.body) ? '/body' : '/body/records'),
  });
};
