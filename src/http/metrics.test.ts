import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './testing.ts';

// Fake embedder: counts only.
describe('GET /metrics', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake' })));
  after(() => t.close());

  it('reports requests by route and status, embedding batches, storage latencies and index gauges after traffic', async () => {
    await t.call('POST', '/v1/vector/write', { keyspace: 'default_keyspace', table: 'vector', text: 'hello' });
    await t.call('POST', '/v1/search/', { query: 'hello', keyspace: 'default_keyspace', table: 'vector' });
    await t.call('POST', '/v1/search/', { query: 'hello', keyspace: 'nope', table: 'vector' });
    const res = await t.call('GET', '/metrics');
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.headers['content-type'] as string, /text\/plain/);
    const body = res.body;
    assert.match(body, /vss_http_requests_total\{route="\/v1\/search\/",method="POST",status="200"\} 1/);
    assert.match(body, /vss_http_requests_total\{route="\/v1\/search\/",method="POST",status="404"\} 1/);
    assert.match(body, /vss_http_request_duration_seconds_bucket\{le="[^"]+",route="\/v1\/vector\/write",method="POST"\}/);
    assert.match(body, /vss_embedding_batch_size_count\{model="all-MiniLM-L6-v2"\} [1-9]/);
    assert.match(body, /vss_storage_operation_duration_seconds_count\{operation="upsertVectors",outcome="ok"\} 1/);
    assert.match(body, /vss_storage_operation_duration_seconds_count\{operation="search",outcome="ok"\} 1/);
    assert.match(body, /vss_index_rows\{keyspace="default_keyspace",table="vector"\} 1/);
    assert.match(body, /vss_index_segments_in_memory\{keyspace="default_keyspace",table="vector"\} 0/);
    assert.match(body, /vss_process_/);
  });

  it('needs an administrator key (All over *), on loopback too: its labels name every tenant\'s keyspaces and tables', async () => {
    assert.equal((await t.call('GET', '/metrics', undefined, null)).statusCode, 401);
    const scoped = await t.makeKey('All', ['default_keyspace']);
    assert.equal((await t.call('GET', '/metrics', undefined, await t.makeKey('Write'))).statusCode, 403);
    assert.equal((await t.call('GET', '/metrics', undefined, scoped)).statusCode, 403);
    assert.equal((await t.call('GET', '/metrics', undefined, await t.makeKey('All', ['*']))).statusCode, 200);
  });

  it('is served without a key when VSS_METRICS_PUBLIC=true', async () => {
    const open = await startTestApp({ model: 'fake', env: { VSS_METRICS_PUBLIC: 'true' } });
    try {
      assert.equal((await open.call('GET', '/metrics', undefined, null)).statusCode, 200);
    } finally {
      await open.close();
    }
  });
});
