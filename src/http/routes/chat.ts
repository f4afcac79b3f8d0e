import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import { DEFAULT_LIMITS } from '../../config/config.ts';
import { chat, type ChatOutput } from '../../service/chat.ts';
import type { Deps } from '../../service/deps.ts';
import { LlmSlots } from '../../service/llm-slots.ts';
import { callerOf } from '../auth.ts';
import { answers } from '../openapi-responses.ts';
import { ChatAnswer, ChatEvents, NAME_PATTERN } from '../schemas/index.ts';

export const ChatBody = Type.Object(
  {
    query: Type.String({ minLength: 1, maxLength: DEFAULT_LIMITS.queryBytes, description: 'A question, or a command: /help, /files, /keyspaces, /tables [keyspace], /search <text>' }),
    keyspace: Type.Optional(Type.String({ pattern: NAME_PATTERN, description: 'The keyspace questions and /search use (default: the default keyspace)' })),
    stream: Type.Optional(Type.Boolean({ description: 'Answer as server-sent events (also when the accept header is text/event-stream)' })),
  },
  { additionalProperties: false },
);
export type ChatBody = Static<typeof ChatBody>;

/** Words of a response with their surrounding whitespace: they concatenate to the response. */
export function deltaPieces(response: string): string[] {
  // `|\s+` takes trailing whitespace at once: alone, `\s*\S+\s*` retried it from every position.
  return response.match(/\s*\S+\s*|\s+/g) ?? [response];
}

/** Server-sent events: `delta` events whose texts concatenate to `response`, then `done` with the whole answer. */
function* events(out: ChatOutput): Generator<string> {
  const pieces = deltaPieces(out.response);
  for (let i = 0; i < pieces.length; i += 6) {
    yield `event: delta\ndata: ${JSON.stringify({ text: pieces.slice(i, i + 6).join('') })}\n\n`;
  }
  yield `event: done\ndata: ${JSON.stringify(out)}\n\n`;
}

export const chatRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  const llm = new LlmSlots(deps.config.chat.maxConcurrent);
  app.post('/v1/chat/', {
    schema: { tags: ['search'], summary: 'Commands, and questions answered from stored content with their sources', body: ChatBody,
      response: answers({ 200: { description: 'The answer; as server-sent events when streamed', content: { 'application/json': { schema: ChatAnswer }, 'text/event-stream': { schema: ChatEvents } } } }, ['not_ready', 'rate_limited']),
    },
    // Only a named keyspace is gated here: commands like /help need none, the default is checked by the service.
    config: { permission: 'Read', keyspaces: (r) => [(r.body as ChatBody).keyspace] },
    handler: async (req, reply) => {
      const out = await chat(deps, callerOf(req), { query: req.body.query, keyspace: req.body.keyspace }, llm);
      const accept = req.headers.accept ?? '';
      const stream = req.body.stream ?? accept.includes('text/event-stream');
      if (!stream) return out;
      return reply
        .header('content-type', 'text/event-stream; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('x-accel-buffering', 'no')
        .send(Readable.from(events(out)));
    },
  });
};
