import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { generate, openaiEmbeddings } from '../../service/embeddings.ts';
import { EmbeddingsBody, GenerateQuery } from '../schemas/index.ts';

export const embeddingRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.get('/v1/generate/', {
    schema: { tags: ['embeddings'], summary: "One text's embedding", querystring: GenerateQuery },
    config: { permission: 'Read' },
    handler: (req) => generate(deps, req.query),
  });
  app.post('/v1/embeddings', {
    schema: { tags: ['embeddings'], summary: 'OpenAI-compatible embeddings', body: EmbeddingsBody },
    config: { permission: 'Read' },
    handler: (req) => openaiEmbeddings(deps, req.body),
  });
};
