/**
 * Builds the Fastify application: validation, errors, request ids, authentication, OpenAPI and
 * one plugin per resource. No listening here: tests drive it with app.inject().
 */
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { describeNames } from './openapi-names.ts';
import { describeServiceChecked } from './openapi-service-checked.ts';
import { ServiceError } from '../errors.ts';
import type { Deps } from '../service/deps.ts';
import { SERVICE_NAME, SERVICE_VERSION } from '../service/system.ts';
import { authPlugin } from './auth.ts';
import { consolePlugin } from './console.ts';
import { clientErrorResponse, sendProblem } from './problem.ts';
import { registerRateLimit } from './rate-limit.ts';
import { boundedValidatorCompiler } from './validator.ts';
import { withBatchLimit } from './schema-limits.ts';
import { withCommonErrors } from './openapi-responses.ts';
import { Problem } from './schemas/problem.ts';
import { registerAnswerCheck } from './answer-check.ts';
import { queryStringProblem } from './query-string.ts';
import { registerMetrics } from './metrics-route.ts';
import { Metrics } from '../observability/metrics.ts';
import { accountRoutes } from './routes/accounts.ts';
import { billingRoutes } from './routes/billing.ts';
import { chatRoutes } from './routes/chat.ts';
import { dockerRoutes } from './routes/docker.ts';
import { embeddingRoutes } from './routes/embeddings.ts';
import { fileRoutes } from './routes/files.ts';
import { keyspaceRoutes } from './routes/keyspaces.ts';
import { metadataRoutes } from './routes/metadata.ts';
import { queryRoutes } from './routes/query.ts';
import { portableRoutes } from './routes/portable.ts';
import { searchRoutes } from './routes/search.ts';
import { snapshotRoutes } from './routes/snapshots.ts';
import { systemRoutes } from './routes/system.ts';
import { vectorRoutes } from './routes/vectors.ts';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface AppOptions {
  /** pino options, or false for silence (tests). */
  logger?: FastifyServerOptions['logger'];
  /** Prometheus metrics; a fresh registry when absent. */
  metrics?: Metrics;
  /** Tests: an answer its response schema would change is a 500 naming the difference (answer-check.ts). */
  checkAnswers?: boolean;
}

/**
 * The longest path parameter the router takes (Fastify's default is 100): longer than any a
 * schema allows, so that those are refused naming the field; past it the answer names the URL.
 */
const MAX_PARAM_LENGTH = 256;

/** See the `requestTimeout` option below. */
const REQUEST_TIMEOUT_MS = 300_000;

/**
 * The methods each route pattern takes, recorded as routes are added, so that a known path
 * called with another method is a 405 with `Allow` rather than a 404.
 */
function routeMethods(app: FastifyInstance): { allowed: (path: string) => string[] } {
  const routes: { pattern: RegExp; methods: string[] }[] = [];
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map(String);
    const source = route.url
      .replace(/\/+$/, '')
      .split('/')
      .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
      .join('/');
    routes.push({ pattern: new RegExp(`^${source}/?$`), methods });
  });
  return {
    allowed: (path) => [...new Set(routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods))].sort(),
  };
}

export async function buildApp(deps: Deps, opts: AppOptions = {}): Promise<FastifyInstance> {
  const app = createServer(deps, opts);
  // Every bad field named, up to a bound, whatever the body holds (validator.ts).
  app.setValidatorCompiler(boundedValidatorCompiler());
  app.addHook('onRoute', (route) => {
    const schema = route.schema as Record<string, unknown> | undefined;
    if (schema) for (const part of ['body', 'querystring', 'params'] as const) if (schema[part]) schema[part] = withBatchLimit(schema[part], deps.config.limits);
    withCommonErrors(route);
  });
  if (opts.checkAnswers) registerAnswerCheck(app);
  registerBodyParsers(app);
  registerAnswerHooks(app);
  await registerOpenApi(app, deps);
  await app.register(authPlugin, { storage: deps.storage, publicPrefixes: ['/v1/docs'], failuresPerMinute: { perAddress: deps.config.limits.authFailuresPerMinute, global: deps.config.limits.authFailuresPerMinuteGlobal } });
  await registerRateLimit(app, deps);
  await registerMetrics(app, opts.metrics ?? new Metrics(deps.storage.indexStatus?.bind(deps.storage)), { public: deps.config.metricsPublic });

  app.get('/v1/openapi.json', { schema: { hide: true }, config: { permission: 'public' } }, async () => app.swagger());

  await app.register(systemRoutes, { deps });
  await app.register(searchRoutes, { deps });
  await app.register(vectorRoutes, { deps });
  await app.register(metadataRoutes, { deps });
  await app.register(keyspaceRoutes, { deps });
  await app.register(embeddingRoutes, { deps });
  await app.register(accountRoutes, { deps });
  await app.register(billingRoutes, { deps });
  await app.register(fileRoutes, { deps });
  await consolePlugin(app);
  await app.register(queryRoutes, { deps });
  await app.register(chatRoutes, { deps });
  await app.register(dockerRoutes, { deps });
  await app.register(snapshotRoutes, { deps });
  await app.register(portableRoutes, { deps });
  return app;
}

/** The Fastify server with the service's limits, request ids, timeouts and pre-routing errors as problems. */
function createServer(deps: Deps, opts: AppOptions) {
  return Fastify({
    logger: opts.logger ?? false,
    bodyLimit: deps.config.limits.bodyBytes,
    // Per-address limits (invalid keys, requests without a key) count the client, not a proxy.
    trustProxy: deps.config.trustProxy,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // An id from the client is echoed when it is sane; otherwise one is made.
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    // Fastify turns Node's request timeout off by default; a body that stops arriving (or arrives a
    // byte at a time) would then hold its connection for ever. Node's own default again: 5 minutes
    // for a whole request, enough for a 64 MiB upload at ~220 KB/s.
    requestTimeout: REQUEST_TIMEOUT_MS,
    clientErrorHandler: (err, socket) => {
      if (socket.writable) socket.end(clientErrorResponse(err as { code?: string }, randomUUID()));
      else socket.destroy();
    },
    // Errors Fastify meets before routing (a path with bad percent-encoding) skip the error
    // handler and the hooks: answered here as problems too, with the request id.
    frameworkErrors: (err, request, reply) => {
      reply.header('x-request-id', request.id);
      const bad =
        err.code === 'FST_ERR_BAD_URL'
          ? new ServiceError('validation_failed', `The URL cannot be read: ${err.message}`, { errors: [{ path: '/url', message: 'is not a valid URL (bad percent-encoding?)' }] })
          : err.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? new ServiceError('validation_failed', `A path segment is longer than ${MAX_PARAM_LENGTH} characters.`, { errors: [{ path: '/url', message: `has a path segment longer than ${MAX_PARAM_LENGTH} characters` }] })
            : err;
      sendProblem(request, reply, bad);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
}

type App = ReturnType<typeof createServer>;

function registerBodyParsers(app: App): void {
  // Bodies are JSON (and multipart for uploads): anything else is a 415, not a string to validate.
  app.removeContentTypeParser('text/plain');
  // An empty JSON body is no body (`curl -X POST -H 'content-type: application/json'` on the
  // routes that take none); where a body is required, the schema names it.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
    body === '' ? done(null, undefined) : json(request, body as string, done),
  );
}

/** Request ids on every answer, problems for bad query strings, unknown routes and wrong methods, and closing connections while shutting down. */
function registerAnswerHooks(app: App): void {
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    const bad = queryStringProblem(request.url);
    if (bad) throw new ServiceError('validation_failed', `The query string cannot be read: it ${bad}.`, { errors: [{ path: '/querystring', message: bad }] });
  });
  // Once closing, every answer ends its connection: a keep-alive client would otherwise hold
  // the process for the keep-alive timeout (72 s), past any orchestrator's grace period.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
  app.setErrorHandler((err, request, reply) => sendProblem(request, reply, err));
  const methods = routeMethods(app);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const allowed = methods.allowed(path);
    if (allowed.length > 0) {
      return sendProblem(request, reply, new ServiceError('method_not_allowed', `${path} takes ${allowed.join(', ')}, not ${request.method}.`, { headers: { allow: allowed.join(', ') } }));
    }
    return sendProblem(request, reply, new ServiceError('not_found', `No route ${request.method} ${path}.`));
  });
}

/** The OpenAPI document built from the routes' schemas (served at /v1/openapi.json by buildApp) and its browsable view (/v1/docs). */
async function registerOpenApi(app: App, deps: Deps): Promise<void> {
  // Shared by every error response's schema (openapi-responses.ts); listed under components.
  app.addSchema(Problem);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: `${SERVICE_NAME} — vector search and storage`, version: SERVICE_VERSION },
      components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' } } },
      security: [{ apiKey: [] }],
    },
    // Shared schemas keep their $id as their component name (#/components/schemas/Problem).
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transformObject: (doc) => describeNames(describeServiceChecked('openapiObject' in doc ? doc.openapiObject : doc.swaggerObject, { reranker: deps.reranker !== null }), deps.models.names()),
  });
  await app.register(swaggerUi, { routePrefix: '/v1/docs' });
}
