/**
 * Portable export and import (service/portable.ts): `GET /v1/export` streams a keyspace or one
 * table as JSON lines; `POST /v1/import` writes a batch of those lines into a keyspace. The body
 * limit of an import leaves room for one stored file in base64 with its chunk rows.
 */
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { exportKeyspace, importItems, type ImportItem } from '../../service/portable.ts';
import { answers } from '../openapi-responses.ts';
import { base64Length, ExportLines, ExportQuery, ImportAnswer, ImportBody } from '../schemas/index.ts';

export const portableRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  const { limits } = deps.config;
  app.get('/v1/export', {
    schema: {
      tags: ['export'],
      summary: 'A keyspace (or one table) in the export format, as JSON lines',
      querystring: ExportQuery,
      response: answers({ 200: { description: 'JSON lines', content: { 'application/x-ndjson': { schema: ExportLines } } } }, ['table_not_found']),
    },
    config: { permission: 'Read', keyspaces: (r) => [(r.query as { keyspace: string }).keyspace] },
    handler: async (req, reply) => {
      const lines = await exportKeyspace(deps, req.query);
      return reply.header('content-type', 'application/x-ndjson; charset=utf-8').send(Readable.from(lines));
    },
  });
  app.post('/v1/import', {
    schema: {
      tags: ['export'],
      summary: 'Write lines of an export into a keyspace (upserts: a batch sent again changes nothing)',
      body: ImportBody,
      response: answers({ 200: ImportAnswer }, ['table_not_found', 'already_exists', 'dimension_mismatch', 'quota_exceeded', 'insufficient_storage', 'unknown_metric']),
    },
    config: { permission: 'Write', keyspaces: (r) => [(r.body as ImportBody).keyspace] },
    bodyLimit: limits.bodyBytes + 2 * base64Length(limits.uploadBytes),
    handler: (req) => importItems(deps, { keyspace: req.body.keyspace, items: req.body.items as ImportItem[] }),
  });
};
