/**
 * Snapshots of the embedded data directory: `POST /v1/snapshots` takes one, `GET` lists them,
 * `GET /v1/snapshots/:name` streams an archive, `DELETE` removes it. Administrator only: an
 * archive holds every tenant's data.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Deps } from '../../service/deps.ts';
import { createSnapshot, deleteSnapshot, listSnapshots, openSnapshot, SNAPSHOT_NAME } from '../../service/snapshots.ts';
import { answers } from '../openapi-responses.ts';
import { SnapshotAnswer, SnapshotDeleted, SnapshotList, StreamedBytes } from '../schemas/index.ts';

const SnapshotParams = Type.Object({ name: Type.String({ maxLength: 64, pattern: SNAPSHOT_NAME.source, description: 'The snapshot name, as listed' }) });

export const snapshotRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post('/v1/snapshots', {
    schema: { tags: ['snapshots'], summary: 'Take a consistent snapshot of the data directory while writes go on (embedded storage)', response: answers({ 200: SnapshotAnswer }, ['snapshot_in_progress', 'not_supported', 'insufficient_storage']) },
    config: { permission: 'Admin' },
    handler: () => createSnapshot(deps),
  });
  app.get('/v1/snapshots', {
    schema: { tags: ['snapshots'], summary: 'The snapshots kept, and the one being taken', response: answers({ 200: SnapshotList }, ['not_supported']) },
    config: { permission: 'Admin' },
    handler: () => listSnapshots(deps),
  });
  app.get('/v1/snapshots/:name', {
    schema: {
      tags: ['snapshots'],
      summary: 'Download a snapshot archive',
      params: SnapshotParams,
      response: answers({ 200: { description: 'The archive (docs/API.md, "Snapshots")', content: { 'application/octet-stream': { schema: StreamedBytes } } } }, ['not_found', 'not_supported']),
    },
    config: { permission: 'Admin' },
    handler: async (req, reply) => {
      const s = await openSnapshot(deps, req.params.name);
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-length', String(s.size))
        .header('content-disposition', `attachment; filename="${s.name}"`)
        .send(s.stream);
    },
  });
  app.delete('/v1/snapshots/:name', {
    schema: { tags: ['snapshots'], summary: 'Remove a snapshot archive', params: SnapshotParams, response: answers({ 200: SnapshotDeleted }, ['not_found', 'not_supported']) },
    config: { permission: 'Admin' },
    handler: (req) => deleteSnapshot(deps, req.params.name),
  });
};
