/**
 * pino options for the service: structured JSON lines carrying the request id (`reqId`), at
 * the configured level. Secrets never reach a log line: the headers that carry them are
 * redacted even if a serializer or a debugging change starts logging headers.
 */
import type { FastifyServerOptions } from 'fastify';
import type { DestinationStream } from 'pino';

export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["stripe-signature"]',
  'req.headers.cookie',
  'headers["x-api-key"]',
];

export function loggerOptions(level: string, stream?: DestinationStream): FastifyServerOptions['logger'] {
  return {
    level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    ...(stream ? { stream } : {}),
  };
}
