import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Deps } from '../../service/deps.ts';
import { generate, openaiEmbeddings } from '../../service/embeddings.ts';
import { answers } from '../openapi-responses.ts';
import { EmbeddingsAnswer, EmbeddingsBody, GenerateAnswer, GenerateQuery } from '../schemas/index.ts';

export const embeddingRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.get('/v1/generate/', {
    schema: { tags: ['embeddings'], summary: "One text's embedding", querystring: GenerateQuery, response: answers({ 200: GenerateAnswer }, ['unknown_model', 'not_ready']) },
    config: { permission: 'Read' },
    handler: (req) => generate(deps, req.query),
  });
  app.post('/v1/embeddings', {
    schema: { tags: ['embeddings'], summary: 'OpenAI-compatible embeddings', body: EmbeddingsBody, response: answers({ 200: EmbeddingsAnswer }, ['unknown_model', 'not_ready']) },
    config: { permission: 'Read' },
    handler: (req) => openaiEmbeddings(deps, req.body),
  });
};
