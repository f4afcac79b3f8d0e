/**
 * `npm start`: read the environment once, start loading the model, open storage meanwhile,
 * make the administrator on first start, and serve.
 */
import { ConfigError, loadConfig } from './config/config.ts';
import { ModelRegistry } from './embedding/registry.ts';
import { Metrics } from './observability/metrics.ts';
import { buildApp } from './http/app.ts';
import { SearchWarmUp } from './http/warm-up.ts';
import { loggerOptions } from './http/logging.ts';
import { createReranker } from './service/rerank.ts';
import { bootstrap } from './service/bootstrap.ts';
import { openStorage } from './storage/factory.ts';
import { tuneV8Heap } from './platform/v8-heap.ts';

async function main(): Promise<void> {
  // Before anything allocates much: V8's own heap sizing sets off a mark-compact every few hundred ms once a server only serves (v8-heap.ts).
  tuneV8Heap();
  const config = loadConfig(process.env);
  // Metrics need the storage backend, which opens after the model starts loading; no batch can
  // run before they exist (the model answers requests only, and the server is not listening yet).
  let metrics: Metrics | undefined;
  const models = new ModelRegistry({
    ...config,
    embedding: { ...config.embedding, onBatch: (model, size, ms, ok) => metrics?.onEmbeddingBatch(model, size, ms, ok) },
    embedBulk: config.embedBulk,
  });
  // The model loads off the request path, from now on, while storage opens and the app is built;
  // the healthcheck answers 503 until it is ready. A failure is logged below, once there is a logger.
  const modelLoad = models.start().then(
    () => undefined,
    (err: unknown) => ({ err }),
  );
  // Storage reports things (an index being rebuilt) before the app and its logger exist: those
  // wait here until it does.
  let storageLog: ((msg: string, err?: unknown) => void) | undefined;
  const early: [string, unknown][] = [];
  const backend = await openStorage(config, { log: (msg, err) => (storageLog ? storageLog(msg, err) : early.push([msg, err])) });
  metrics = new Metrics(backend.indexStatus?.bind(backend));
  const storage = metrics.instrument(backend);
  let warn: ((msg: string, err?: unknown) => void) | undefined;
  const reranker = createReranker(config.rerank, (msg, err) => warn?.(msg, err));
  const deps = { config, storage, models, reranker };
  const app = await buildApp(deps, {
    metrics,
    logger: loggerOptions(config.logLevel),
  });
  storageLog = (msg, err) => app.log.warn(err === undefined ? {} : { err }, msg);
  warn = storageLog;
  for (const [msg, err] of early.splice(0)) storageLog(msg, err);
  // glibc keeps up to 8 malloc arenas per core, and the model's and extraction's threads grow them
  // for good; `npm start` sets 2 (README.md, Settings), another launcher may not.
  if (process.platform === 'linux' && process.env.MALLOC_ARENA_MAX === undefined) {
    app.log.info('MALLOC_ARENA_MAX is not set: native memory may keep growing under load; start with MALLOC_ARENA_MAX=2 (npm start sets it)');
  }
  // The unwrapped backend: metrics time requests, not this.

  await models.discover();
  const boot = await bootstrap(deps);
  if (boot.generatedKey) {
    // Shown once, on the terminal only (not through the logger), and kept in a 0600 file.
    process.stdout.write(
      `\nAdministrator API key (shown once; also saved to ${boot.keyFile}, readable only by you):\n  ${boot.generatedKey}\n\n`,
    );
  }

  void modelLoad.then((failed) => {
    if (failed) app.log.error({ err: failed.err }, 'model failed to load');
  });

  // Once serving, the search path warms up on rows of its own while no request comes (warm-up.ts).
  let requests = 0;
  app.server.on('request', () => requests++);
  const warmUp = new SearchWarmUp(deps, { searches: config.warmUpSearches, activity: () => requests, log: storageLog });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    // Requests still open after the grace (a stalled upload, a client trickling its body) are cut,
    // so that models and storage close cleanly before an orchestrator's SIGKILL (10 s in Docker).
    setTimeout(() => app.server.closeAllConnections(), config.shutdownGraceMs).unref();
    await warmUp.close();
    await app.close();
    await models.close();
    await storage.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  await app.listen({ host: config.host, port: config.port });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  process.stdout.write(`listening on http://${config.host}:${port}\n`);
  void warmUp.start();
}

main().catch((err: unknown) => {
  process.stderr.write(err instanceof ConfigError ? `${err.message}\n` : `fatal: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
