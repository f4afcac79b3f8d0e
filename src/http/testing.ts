/**
 * Test harness: a real app over real embedded storage in a temp directory, driven through
 * app.inject(). The model is the real one (default) or, where a test says so, an instant fake
 * that carries no meaning.
 *
 * With VSS_TEST_STORAGE=cassandra (tests only; `npm run test:cassandra` sets it) the storage is
 * the Cassandra backend instead, on VSS_TEST_CASSANDRA_CONTACT_POINTS (default 127.0.0.1),
 * datacenter1, replication factor 1, with a fresh random keyspace prefix and system keyspace per
 * app, dropped again by close(); the temp directory still holds uploads in flight.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, FastifyServerOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config, type Limits } from '../config/config.ts';
import { FakeEmbeddingModel } from '../embedding/fake.ts';
import { ModelRegistry } from '../embedding/registry.ts';
import { bootstrap } from '../service/bootstrap.ts';
import { createReranker } from '../service/rerank.ts';
import type { Deps } from '../service/deps.ts';
import { hashKey } from '../service/keys.ts';
import type { Permission, Storage } from '../storage/api.ts';
import { openCassandraStorage } from '../storage/cassandra/cassandra-storage.ts';
import { dropPrefixed, freshNames, storedContentIds } from '../storage/cassandra/test-support.ts';
import { openEmbeddedStorage } from '../storage/embedded/embedded-storage.ts';
import { Metrics } from '../observability/metrics.ts';
import { buildApp } from './app.ts';

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef';

/** The backend the HTTP tests run on: 'embedded' unless VSS_TEST_STORAGE=cassandra. */
export const TEST_STORAGE: 'embedded' | 'cassandra' = process.env.VSS_TEST_STORAGE === 'cassandra' ? 'cassandra' : 'embedded';
const CASSANDRA_CONTACT_POINTS = (process.env.VSS_TEST_CASSANDRA_CONTACT_POINTS ?? '127.0.0.1').split(',').map((s) => s.trim()).filter(Boolean);
const CASSANDRA_LOCAL_DC = 'datacenter1';
const CASSANDRA_REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 1}";

export interface TestApp {
  app: FastifyInstance;
  deps: Deps;
  dataDir: string;
  /** POST/GET with the admin key unless `key` is given (null: no key header). */
  call(method: 'GET' | 'POST' | 'DELETE' | 'PUT', url: string, body?: unknown, key?: string | null): Promise<LightMyRequestResponse>;
  /** Makes an extra key directly in storage (issuing keys over HTTP is another endpoint's job). */
  makeKey(permissions: Permission, resources?: string[], userId?: string): Promise<string>;
  /** The fake model, when the app has one (its `calls` count every embedding). */
  fakeModel: FakeEmbeddingModel | null;
  /** Ids of the stored file contents: `<dataDir>/files` entries (embedded), content ids of the system keyspace (Cassandra). */
  storedContent(): Promise<string[]>;
  close(): Promise<void>;
}

let keyCounter = 0;

export async function startTestApp(
  opts: {
    model?: 'real' | 'fake';
    limits?: Partial<Limits>;
    env?: Record<string, string>;
    fakeDimension?: number;
    /** The fake model waits this long per call (work that takes time, e.g. to leave in the middle of). */
    fakeDelayMs?: number;
    logger?: FastifyServerOptions['logger'];
    /** The clock rows expire by (embedded storage and the service); Cassandra's engine keeps its own. */
    clock?: () => number;
    /** The backend, instead of TEST_STORAGE (a test that moves data between backends). */
    storage?: 'embedded' | 'cassandra';
    /** Serve this existing data directory (a restored one) instead of a fresh temp one; close() still removes it. */
    dataDir?: string;
  } = {},
): Promise<TestApp> {
  const dataDir = opts.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), 'vss-test-')));
  const config: Config = loadConfig({ VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: ADMIN_KEY, ...opts.env }, { limits: opts.limits });
  const cassandra = (opts.storage ?? TEST_STORAGE) === 'cassandra' ? freshNames() : null;
  const discard = async (): Promise<void> => {
    await rm(dataDir, { recursive: true, force: true });
    if (cassandra) await dropPrefixed(CASSANDRA_CONTACT_POINTS, CASSANDRA_LOCAL_DC, cassandra.keyspacePrefix);
  };
  let backend: Storage;
  if (cassandra) {
    try {
      backend = await openCassandraStorage({
        contactPoints: CASSANDRA_CONTACT_POINTS,
        localDc: CASSANDRA_LOCAL_DC,
        replication: CASSANDRA_REPLICATION,
        exactScanMaxRows: config.index.exactBelowRows,
        systemKeyspace: cassandra.systemKeyspace,
        keyspacePrefix: cassandra.keyspacePrefix,
        apiKeyCacheMs: config.cassandra.apiKeyCacheMs,
      });
    } catch (err) {
      await discard().catch(() => undefined);
      throw err;
    }
  } else {
    backend = await openEmbeddedStorage({ dataDir, index: config.index, clock: opts.clock });
  }
  // Wired as main.ts wires it, so metrics see what production sees.
  const metrics = new Metrics(backend.indexStatus?.bind(backend));
  const storage = metrics.instrument(backend);
  const embedding = { ...config.embedding, onBatch: metrics.onEmbeddingBatch };
  let models: ModelRegistry;
  let fakeModel: FakeEmbeddingModel | null = null;
  if (opts.model === 'fake') {
    // Named like the default model so defaults resolve; it checks no meaning.
    fakeModel = new FakeEmbeddingModel({ name: config.defaultModel, dimension: opts.fakeDimension ?? 384, delayMs: opts.fakeDelayMs });
    models = ModelRegistry.fromModels([fakeModel], { embedding });
  } else {
    models = new ModelRegistry({ ...config, embedding });
    await models.start();
  }
  const deps: Deps = { config, storage, models, reranker: createReranker(config.rerank), clock: opts.clock };
  await bootstrap(deps);
  const app = await buildApp(deps, { metrics, logger: opts.logger, checkAnswers: true });
  await app.ready();
  const admin = await storage.getUserByEmail('admin@localhost');
  return {
    app,
    deps,
    dataDir,
    fakeModel,
    call(method, url, body, key = ADMIN_KEY) {
      const headers: Record<string, string> = {};
      if (key !== null) headers['x-api-key'] = key;
      return app.inject({ method, url, headers, ...(body === undefined ? {} : { payload: body as object }) });
    },
    async makeKey(permissions, resources = ['*'], userId = admin!.id) {
      const secret = `test-key-${permissions}-${++keyCounter}-${Math.random().toString(36).slice(2)}`;
      await storage.createApiKey({ userId, name: `test ${permissions}`, hash: hashKey(secret), permissions, resources });
      return secret;
    },
    async storedContent() {
      if (cassandra) return storedContentIds(CASSANDRA_CONTACT_POINTS, CASSANDRA_LOCAL_DC, cassandra.systemKeyspace);
      return (await readdir(path.join(dataDir, 'files'))).sort();
    },
    async close() {
      try {
        await app.close();
        await models.close();
        await storage.close();
      } finally {
        await discard();
      }
    },
  };
}

export type Part = { name: string; value: string } | { name: string; filename: string; content: Buffer | string; type?: string };

/** A multipart/form-data body built byte by byte: parts in the given order, filenames as given. */
export function multipart(parts: Part[]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----vss-${randomUUID()}`;
  const out: Buffer[] = [];
  for (const p of parts) {
    out.push(Buffer.from(`--${boundary}\r\n`));
    if ('filename' in p) {
      out.push(Buffer.from(`Content-Disposition: form-data; name="${p.name}"; filename="${p.filename.replace(/["\\]/g, (c) => `\\${c}`)}"\r\nContent-Type: ${p.type ?? 'application/octet-stream'}\r\n\r\n`));
      out.push(Buffer.isBuffer(p.content) ? p.content : Buffer.from(p.content));
    } else {
      out.push(Buffer.from(`Content-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}`));
    }
    out.push(Buffer.from('\r\n'));
  }
  out.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(out), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

