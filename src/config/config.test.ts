import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, type Config } from './config.ts';

describe('configuration', () => {
  it('has working defaults and is frozen', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.storage, 'embedded');
    assert.equal(c.limits.bodyBytes, 32 * 1024 * 1024);
    assert.ok(Object.isFrozen(c) && Object.isFrozen(c.limits) && Object.isFrozen(c.plans.free));
    assert.throws(() => ((c as { port: number }).port = 1));
  });

  it('reports every bad setting at once', () => {
    assert.throws(
      () => loadConfig({ VSS_PORT: 'eighty', VSS_STORAGE: 'mongo', VSS_ADMIN_KEY: 'short', VSS_LOG_LEVEL: 'loud' }),
      (e: unknown) => e instanceof ConfigError && e.problems.length === 4,
    );
  });

  it('reads the extraction limits, in MiB where they are sizes, and refuses ones out of range', () => {
    assert.deepEqual(loadConfig({}).extract, { workers: 2, queue: 32, memoryMb: 1024, timeoutMs: 120_000, maxChars: 10_000_000, maxPages: 2000, maxExpandedBytes: 256 * 1024 * 1024 });
    const c = loadConfig({ VSS_EXTRACT_WORKERS: '3', VSS_EXTRACT_MAX_MEMORY_MB: '512', VSS_EXTRACT_MAX_EXPANDED_MB: '16', VSS_EXTRACT_TIMEOUT_MS: '5000' });
    assert.deepEqual([c.extract.workers, c.extract.memoryMb, c.extract.maxExpandedBytes, c.extract.timeoutMs], [3, 512, 16 * 1024 * 1024, 5000]);
    assert.throws(
      () => loadConfig({ VSS_EXTRACT_WORKERS: '0', VSS_EXTRACT_MAX_MEMORY_MB: '64', VSS_EXTRACT_TIMEOUT_MS: 'soon' }),
      (e: unknown) => e instanceof ConfigError && e.problems.length === 3 && e.problems.every((p) => p.startsWith('VSS_EXTRACT_')),
    );
  });

  it('reads the TTL sweep settings, and refuses a batch of no rows', () => {
    assert.deepEqual(loadConfig({}).ttlSweep, { batchRows: 200, intervalMs: 1000 });
    assert.deepEqual(loadConfig({ VSS_TTL_SWEEP_BATCH_ROWS: '250', VSS_TTL_SWEEP_INTERVAL_MS: '5000' }).ttlSweep, { batchRows: 250, intervalMs: 5000 });
    assert.throws(() => loadConfig({ VSS_TTL_SWEEP_BATCH_ROWS: '0' }), (e: unknown) => e instanceof ConfigError && e.problems.length === 1 && /VSS_TTL_SWEEP_BATCH_ROWS/.test(e.problems[0]));
  });

  it('serves metrics without a key only with VSS_METRICS_PUBLIC=true, and refuses other words', () => {
    assert.equal(loadConfig({}).metricsPublic, false);
    assert.equal(loadConfig({ VSS_METRICS_PUBLIC: 'true' }).metricsPublic, true);
    // "1" or "yes" used to mean false without a word: a typo must not silently keep metrics closed (or open).
    for (const word of ['1', 'yes', 'TRUE']) {
      assert.throws(() => loadConfig({ VSS_METRICS_PUBLIC: word }), (e: unknown) => e instanceof ConfigError && e.problems.length === 1 && /VSS_METRICS_PUBLIC/.test(e.problems[0]), word);
    }
  });

  it('limits failed keys per address and, by default ten times that, from all addresses together', () => {
    const d = loadConfig({}).limits;
    assert.deepEqual([d.authFailuresPerMinute, d.authFailuresPerMinuteGlobal], [120, 1200]);
    const set = loadConfig({ VSS_MAX_AUTH_FAILURES_PER_MINUTE: '7' }).limits;
    assert.deepEqual([set.authFailuresPerMinute, set.authFailuresPerMinuteGlobal], [7, 70]);
    assert.equal(loadConfig({ VSS_MAX_AUTH_FAILURES_PER_MINUTE_GLOBAL: '5000' }).limits.authFailuresPerMinuteGlobal, 5000);
    assert.throws(() => loadConfig({ VSS_MAX_AUTH_FAILURES_PER_MINUTE_GLOBAL: '0' }), /VSS_MAX_AUTH_FAILURES_PER_MINUTE_GLOBAL/);
  });

  it('reads VSS_TRUST_PROXY as a switch or the proxies\' addresses, naming every bad one', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ VSS_TRUST_PROXY: 'true' }).trustProxy, true);
    assert.deepEqual(loadConfig({ VSS_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1,fd00::/8' }).trustProxy, ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8']);
    assert.throws(
      () => loadConfig({ VSS_TRUST_PROXY: '10.0.0.1,proxy.local,10.0.0.0/33,::1/64' }),
      (e: unknown) => e instanceof ConfigError && e.problems.length === 1 && /"proxy\.local", "10\.0\.0\.0\/33"\)/.test(e.problems[0]),
    );
  });

  for (const [name, urlOf] of [
    ['VSS_CHAT_URL', (c: Config) => c.chat.url],
    ['VSS_RERANK_URL', (c: Config) => c.rerank.url],
  ] as const) {
    it(`refuses a ${name} that is not an http(s) URL, without echoing it`, () => {
      for (const url of ['not a url', 'ftp://user:s3cret@x/y', 'localhost:8000/v1']) {
        assert.throws(
          () => loadConfig({ [name]: url }),
          (e: unknown) => e instanceof ConfigError && e.problems.length === 1 && e.problems[0]!.includes(name) && !e.message.includes(url),
          url,
        );
      }
      for (const url of ['http://localhost:8000/v1', 'https://user:pw@llm.example.com/v1']) assert.equal(urlOf(loadConfig({ [name]: url })), url);
    });
  }

  it('reads the reranker settings, with no reranker by default', () => {
    assert.deepEqual(loadConfig({}).rerank, { url: undefined, model: undefined, apiKey: undefined, timeoutMs: 5000, maxConcurrent: 4 });
    const set = loadConfig({
      VSS_RERANK_URL: 'http://127.0.0.1:8001/v1',
      VSS_RERANK_MODEL: 'jina-reranker-v2-base-multilingual',
      VSS_RERANK_API_KEY: 'rk-not-a-real-key',
      VSS_RERANK_TIMEOUT_MS: '800',
      VSS_RERANK_MAX_CONCURRENT: '2',
    }).rerank;
    assert.deepEqual(set, { url: 'http://127.0.0.1:8001/v1', model: 'jina-reranker-v2-base-multilingual', apiKey: 'rk-not-a-real-key', timeoutMs: 800, maxConcurrent: 2 });
    assert.throws(() => loadConfig({ VSS_RERANK_TIMEOUT_MS: '0' }), /VSS_RERANK_TIMEOUT_MS/);
    assert.throws(() => loadConfig({ VSS_RERANK_MAX_CONCURRENT: 'many' }), /VSS_RERANK_MAX_CONCURRENT/);
  });

  it('reads the Cassandra connection: contact points, or an Astra DB bundle with credentials', () => {
    const plain = loadConfig({ VSS_STORAGE: 'cassandra', VSS_CASSANDRA_CONTACT_POINTS: '10.0.0.1, 10.0.0.2' });
    assert.deepEqual(plain.cassandra.contactPoints, ['10.0.0.1', '10.0.0.2']);
    assert.equal(plain.cassandra.secureConnectBundle, undefined);
    assert.equal(plain.cassandra.credentials, undefined);
    const astra = loadConfig({
      VSS_STORAGE: 'cassandra',
      VSS_CASSANDRA_SECURE_BUNDLE: 'secure-connect-db.zip',
      VSS_CASSANDRA_USERNAME: 'token',
      VSS_CASSANDRA_PASSWORD: 'AstraCS:not-a-real-token',
    });
    assert.match(astra.cassandra.secureConnectBundle!, /^\/.*secure-connect-db\.zip$/);
    assert.deepEqual(astra.cassandra.credentials, { username: 'token', password: 'AstraCS:not-a-real-token' });
    assert.throws(
      () => loadConfig({ VSS_CASSANDRA_USERNAME: 'cassandra' }),
      (e: unknown) => e instanceof ConfigError && /VSS_CASSANDRA_USERNAME and VSS_CASSANDRA_PASSWORD/.test(e.message) && !e.message.includes('AstraCS'),
    );
  });
});
