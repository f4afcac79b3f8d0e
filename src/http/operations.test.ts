import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import net from 'node:net';
import { Validator } from '@seriousme/openapi-schema-validator';
import { ADMIN_KEY, startTestApp, type TestApp } from './testing.ts';

// Fake embedder: shapes and statuses only, no meaning.
describe('keyspaces, metadata, system and embeddings endpoints', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake' })));
  after(() => t.close());

  it('creates, autoprovisions and lists keyspaces with detailed metadata', async () => {
    let res = await t.call('POST', '/v1/keyspaces/create', { keyspace: 'named_ks' });
    assert.equal(res.statusCode, 200, res.body);
    const ks = res.json();
    assert.equal(ks.keyspace, 'named_ks');
    assert.ok(ks.owner && ks.created_at && ks.replication);
    assert.deepEqual(ks.tables.map((x: { table: string; dimension: number; row_count: number }) => [x.table, x.dimension, x.row_count]), [['vector', 384, 0]]);
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'named_ks' })).json().code, 'already_exists');
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'named_ks' })).statusCode, 409);
    res = await t.call('POST', '/v1/keyspaces/create');
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.json().keyspace, /^ks_[0-9a-f]{12}$/);
    res = await t.call('POST', '/v1/keyspaces/autoprovision');
    assert.equal(res.statusCode, 200, res.body);
    const auto = res.json().keyspace;
    const list = await t.call('POST', '/v1/keyspaces/list');
    const names = list.json().keyspaces.map((k: { keyspace: string }) => k.keyspace);
    for (const n of ['default_keyspace', 'named_ks', auto]) assert.ok(names.includes(n), n);
  });

  it('creates tables and refuses bad ones', async () => {
    let res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'named_ks', table: 'images', dimension: 512, metric: 'dot' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().metric, 'dot_product');
    res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'named_ks', table: 'images', dimension: 512 });
    assert.equal(res.statusCode, 409);
    res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'nope', table: 't', dimension: 4 });
    assert.equal(res.statusCode, 404);
    res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'named_ks', table: 't2', dimension: 5000, metric: 'hamming' });
    assert.equal(res.statusCode, 400);
    res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'named_ks', table: 'T-2', dimension: 4 });
    assert.equal(res.statusCode, 400);
    assert.ok(res.json().errors.some((e: { path: string }) => e.path === '/body/table'));
    // Every bad field in one answer; a union schema adds no lines of its own.
    res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'named_ks', table: 't3', metric: 'bogus', model_name: 'nomodel' });
    assert.equal(res.json().code, 'validation_failed');
    assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/body/metric', '/body/model_name']);
    res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'named_ks', table: 't3', metric: 'bogus' });
    assert.equal(res.json().code, 'unknown_metric');
    res = await t.call('POST', '/v1/keyspaces/create', { keyspace: 'Bad Name' });
    assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/body/keyspace']);
  });

  it('writes metadata records, echoing the six fields, and replaces by source', async () => {
    let res = await t.call('POST', '/v1/metadata/write', { keyspace: 'default_keyspace', table: 'vector', source_file: 'a.pdf', source_type: 'pdf' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { keyspace: 'default_keyspace', table: 'vector', source_file: 'a.pdf', raw_value: '', source_type: 'pdf', processing_details: '' });
    res = await t.call('POST', '/v1/metadata/batch', { records: [{ keyspace: 'default_keyspace', table: 'vector', source_file: 'a.pdf', source_type: 'pdf2' }, { keyspace: 'default_keyspace', table: 'vector', source_file: 'b.md' }] });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().written, 2);
    res = await t.call('POST', '/v1/metadata/batch', [{ keyspace: 'default_keyspace', table: 'vector', source_file: 'c.md' }]);
    assert.equal(res.statusCode, 200, res.body);
    const stored = await t.deps.storage.getMetadata('default_keyspace', 'vector', ['a.pdf']);
    assert.equal(stored.get('a.pdf')?.source_type, 'pdf2');
    res = await t.call('POST', '/v1/metadata/batch', { records: [{ keyspace: 'default_keyspace', table: 'vector', source_file: 'd.md' }, { keyspace: 'nope', table: 'vector', source_file: 'e.md' }] });
    assert.equal(res.statusCode, 404);
    assert.equal((await t.deps.storage.getMetadata('default_keyspace', 'vector', ['d.md'])).size, 0);
    res = await t.call('POST', '/v1/metadata/write', { keyspace: 'default_keyspace', table: 'vector' });
    assert.equal(res.statusCode, 400);
    assert.ok(res.json().errors.some((e: { path: string }) => e.path === '/body/source_file'));
  });

  it('reports system information with the eleven fields', async () => {
    const res = await t.call('GET', '/v1/system/info');
    assert.equal(res.statusCode, 200);
    const info = res.json();
    for (const f of ['platform', 'platform_release', 'platform_version', 'architecture', 'hostname', 'ip_address', 'processor', 'python_version', 'machine']) assert.equal(typeof info[f], 'string', f);
    assert.equal(info.pid, process.pid);
    assert.ok(Number.isInteger(info.cores) && info.cores > 0);
  });

  it('answers GET /v1, /v1/env/ and the healthcheck', async () => {
    const root = await t.call('GET', '/v1/', undefined, null);
    assert.equal(root.json().openapi, '/v1/openapi.json');
    const env = await t.call('GET', '/v1/env/');
    assert.equal(env.json().default_keyspace, 'default_keyspace');
    assert.equal(env.json().limits.batch_items, 1000);
    const health = await t.call('GET', '/v1/healthcheck/', undefined, null);
    assert.equal(health.statusCode, 200);
    assert.deepEqual(health.json(), { status: 'ok', checks: { storage: 'ok', model: 'ok' } });
  });

  it('serves an OpenAPI 3.1 document naming every route', async () => {
    const doc = (await t.call('GET', '/v1/openapi.json', undefined, null)).json();
    assert.equal(doc.openapi, '3.1.0');
    // Checked against the OpenAPI 3.1 schema itself: client generators refuse a document that is not.
    const validator = new Validator();
    const verdict = await validator.validate(doc);
    assert.equal(validator.version, '3.1');
    assert.ok(verdict.valid, JSON.stringify(verdict.errors, null, 1));
    for (const p of ['/v1/search/', '/v1/vector/write', '/v1/vector/batch', '/v1/metadata/write', '/v1/keyspaces/create', '/v1/embeddings']) assert.ok(doc.paths[p], p);
    // Model and metric names are listed, so a client or fuzzer built from the document sends known ones.
    const search = doc.paths['/v1/search/'].post.requestBody.content['application/json'].schema.properties;
    assert.deepEqual(search.model_name.enum, t.deps.models.names());
    assert.ok(search.metric.enum.includes('cosine') && search.metric.enum.includes('dot_product'), JSON.stringify(search.metric));
    const docs = await t.call('GET', '/v1/docs', undefined, null);
    assert.ok([200, 302].includes(docs.statusCode), String(docs.statusCode));
  });

  it('embeds through /v1/generate/ and the OpenAI-compatible /v1/embeddings', async () => {
    let res = await t.call('GET', '/v1/generate/?text=hello%20world');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().dimension, 384);
    assert.equal(res.json().vector.length, 384);
    res = await t.call('GET', '/v1/generate/');
    assert.equal(res.statusCode, 400);
    res = await t.call('POST', '/v1/embeddings', { input: ['a', 'b c'], model: 'all-MiniLM-L6-v2' });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.object, 'list');
    assert.deepEqual(body.data.map((d: { index: number; object: string }) => [d.index, d.object]), [[0, 'embedding'], [1, 'embedding']]);
    assert.equal(body.data[0].embedding.length, 384);
    assert.ok(body.usage.prompt_tokens > 0 && body.usage.total_tokens === body.usage.prompt_tokens);
    res = await t.call('POST', '/v1/embeddings', { input: 'x', model: 'nope' });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'unknown_model');
    assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/body/model']);
    res = await t.call('GET', '/v1/generate/?text=x&model_name=nope');
    assert.equal(res.json().code, 'unknown_model');
    assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/querystring/model_name']);
    res = await t.call('POST', '/v1/embeddings', { input: Array.from({ length: 2049 }, () => 'x') });
    assert.equal(res.statusCode, 400);
    // Token ids (OpenAI's tokenizer) are refused with one error that says why.
    for (const input of [[101, 7592], [[101], [7592, 102]]]) {
      res = await t.call('POST', '/v1/embeddings', { input });
      assert.equal(res.json().code, 'validation_failed');
      assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/body/input']);
    }
  });

  it('answers a path with bad percent-encoding as a problem with the request id', async () => {
    for (const url of ['/v1/files/default_keyspace/vector/a%ZZ.txt', '/v1/files/default_keyspace/vector/%E0%A4%A']) {
      const res = await t.call('GET', url);
      assert.equal(res.statusCode, 400);
      assert.match(res.headers['content-type'] as string, /application\/problem\+json/);
      assert.equal(res.json().code, 'validation_failed');
      assert.ok(res.headers['x-request-id']);
    }
  });

  it('answers a known path called with another method 405 with Allow, and plugin client errors as themselves', async () => {
    for (const [method, url, allow] of [['GET', '/v1/vector/write', 'POST'], ['PUT', '/v1/search', 'POST'], ['DELETE', '/v1/healthcheck/', 'GET, HEAD']] as const) {
      const res = await t.app.inject({ method, url, headers: { 'x-api-key': ADMIN_KEY } });
      assert.equal(res.statusCode, 405, `${method} ${url}`);
      assert.equal(res.json().code, 'method_not_allowed');
      assert.equal(res.headers.allow, allow);
    }
    assert.equal((await t.call('GET', '/v1/no-such-thing')).json().code, 'not_found');
    // @fastify/static's 416 for a range past the end of a console file was a 500.
    const range = await t.app.inject({ method: 'GET', url: '/app.js', headers: { range: 'bytes=999999-' } });
    assert.equal(range.statusCode, 416, range.body);
    assert.equal(range.json().code, 'range_not_satisfiable');
  });

  it('answers what Node cannot parse as a problem with a request id, and closes refused unread bodies', async () => {
    const server = await startTestApp({ model: 'fake' });
    try {
      await server.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = server.app.server.address() as { port: number };
      const raw = (text: string) =>
        new Promise<string>((resolve, reject) => {
          const sock = net.connect(port, '127.0.0.1', () => sock.write(text));
          let got = '';
          sock.on('data', (d) => (got += d.toString()));
          sock.on('end', () => resolve(got));
          sock.on('error', reject);
          setTimeout(() => (sock.destroy(), resolve(`${got}[still open]`)), 3000).unref();
        });
      for (const bad of [`GET /v1 HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`, 'POST /v1 HTTP/1.1\r\nHost: x\r\ncontent-length: abc\r\n\r\n']) {
        const answer = await raw(bad);
        assert.match(answer, /^HTTP\/1\.1 4(00|31) /);
        assert.match(answer, /content-type: application\/problem\+json/i);
        assert.match(answer, /x-request-id: [0-9a-f-]{36}/i);
      }
      // A wrong key with a body still on its way: 401, and the connection closed, not kept reading.
      const refused = await raw(`POST /v1/vector/get HTTP/1.1\r\nHost: x\r\nx-api-key: vss_wrong\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{`);
      assert.match(refused, /^HTTP\/1\.1 401 /);
      assert.doesNotMatch(refused, /\[still open\]$/);
    } finally {
      await server.close();
    }
  });

  it("takes the key as OpenAI's clients send it: Authorization: Bearer", async () => {
    const bearer = (value: string) => t.app.inject({ method: 'POST', url: '/v1/embeddings', headers: { authorization: value }, payload: { input: 'hello' } });
    const key = await t.makeKey('Read');
    assert.equal((await bearer(`Bearer ${key}`)).statusCode, 200);
    assert.equal((await bearer(`bearer ${key}`)).statusCode, 200);
    for (const bad of ['Bearer vss_nope', `Basic ${key}`, key, 'Bearer ']) {
      const res = await bearer(bad);
      assert.equal(res.statusCode, 401, bad);
      assert.equal(res.json().code, 'unauthenticated');
    }
    // x-api-key wins when both are sent.
    const both = await t.app.inject({ method: 'POST', url: '/v1/embeddings', headers: { authorization: `Bearer ${key}`, 'x-api-key': 'vss_wrong' }, payload: { input: 'hello' } });
    assert.equal(both.statusCode, 401);
  });
});
