import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, TEST_STORAGE, type TestApp } from './testing.ts';

// Fake embedder: these tests check storage and validation, not meaning.
describe('vector writes, reads, deletes and counts', () => {
  let t: TestApp;
  const ks = 'default_keyspace';
  before(async () => (t = await startTestApp({ model: 'fake', limits: { batchItems: 50, bodyBytes: 200_000 } })));
  after(() => t.close());

  const count = async (table: string, filter?: object) => {
    const res = await t.call('POST', '/v1/vector/count', { keyspace: ks, table, ...(filter ? { filter } : {}) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json().count as number;
  };

  it('writes one vector, creating the table with its dimension, and reads it back', async () => {
    const res = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'single', key: 'a', vector: [0.5, 0.25, 1], metadata: { tag: 'x' } });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { keyspace: ks, table: 'single', key: 'a' });
    const got = await t.call('POST', '/v1/vector/get', { keyspace: ks, table: 'single', key: 'a' });
    assert.equal(got.statusCode, 200, got.body);
    assert.deepEqual(got.json().vector, [0.5, 0.25, 1]);
    assert.deepEqual(got.json().metadata, { tag: 'x' });
    const list = await t.call('GET', '/v1/keyspaces/list');
    const table = list.json().keyspaces.find((k: { keyspace: string }) => k.keyspace === ks).tables.find((x: { table: string }) => x.table === 'single');
    assert.equal(table.dimension, 3);
    assert.equal(table.metric, 'cosine');
  });

  it('makes a key when none is given, and embeds text when no vector is given', async () => {
    const res = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'vector', text: 'hello there' });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.json().key, /^[0-9a-f-]{36}$/);
    const got = await t.call('POST', '/v1/vector/get', { keyspace: ks, table: 'vector', key: res.json().key });
    assert.equal(got.json().vector.length, 384);
    assert.equal(got.json().text, 'hello there');
  });

  it('upserts by key: writing again replaces, never duplicates', async () => {
    for (const v of [[1, 0], [0, 1], [0, 1]]) {
      const res = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'upsert', key: 'same', vector: v });
      assert.equal(res.statusCode, 200, res.body);
    }
    assert.equal(await count('upsert'), 1);
    const got = await t.call('POST', '/v1/vector/get', { keyspace: ks, table: 'upsert', key: 'same' });
    assert.deepEqual(got.json().vector, [0, 1]);
  });

  it('batch writes records and bare vectors', async () => {
    let res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'batch', vectors: [{ key: 'x', vector: [1, 2] }, { key: 'y', vector: [2, 1], metadata: { n: 1 } }] });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { keyspace: ks, table: 'batch', written: 2, keys: ['x', 'y'] });
    res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'batch', vector: [[3, 4], [4, 3], [5, 5]] });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().written, 3);
    assert.equal(await count('batch'), 5);
    assert.equal(await count('batch', { n: 1 }), 1);
  });

  it('is all or nothing: one bad item writes nothing and every bad index is named', async () => {
    const vectors = [{ key: 'ok1', vector: [1, 1] }, { key: 'bad1', vector: [1, 1, 1] }, { key: 'ok2', vector: [1, 2] }, { key: '€'.repeat(200), vector: [1, 2] }, { key: 'bad3' }];
    const res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'batch', vectors });
    assert.equal(res.statusCode, 400, res.body);
    const paths = res.json().errors.map((e: { path: string }) => e.path);
    assert.ok(paths.includes('/body/vectors/3/key'), paths.join());
    assert.ok(paths.includes('/body/vectors/4'), paths.join());
    assert.equal(await count('batch'), 5);
    const dim = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'batch', vectors: [{ key: 'ok3', vector: [1, 1] }, { key: 'bad', vector: [1, 1, 1] }] });
    assert.equal(dim.statusCode, 400);
    assert.equal(dim.json().code, 'dimension_mismatch');
    assert.ok(dim.json().errors.some((e: { path: string; message: string }) => e.path === '/body/vectors/1/vector' && /3/.test(e.message) && /2/.test(e.message)));
    assert.equal(await count('batch'), 5);
  });

  it('rejects a batch over the item limit', async () => {
    const res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'batch', vector: Array.from({ length: 51 }, () => [1, 2]) });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'validation_failed');
  });

  it('rejects NaN, Infinity and numbers outside float32 range', async () => {
    for (const raw of ['{"keyspace":"default_keyspace","table":"single","vector":[NaN,1,1]}', '{"keyspace":"default_keyspace","table":"single","vector":[Infinity,1,1]}']) {
      const res = await t.app.inject({ method: 'POST', url: '/v1/vector/write', headers: { 'x-api-key': 'test-admin-key-0123456789abcdef', 'content-type': 'application/json' }, payload: raw });
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().code, 'malformed_body');
    }
    const big = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'single', vector: [1e39, 1, 1] });
    assert.equal(big.statusCode, 400);
    assert.ok(big.json().errors.some((e: { path: string }) => e.path === '/body/vector/0'));
  });

  it('rejects keys over 512 bytes of UTF-8, and zero vectors under cosine', async () => {
    const res = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'single', key: '€'.repeat(200), vector: [1, 1, 1] });
    assert.equal(res.statusCode, 400);
    assert.ok(res.json().errors.some((e: { path: string }) => e.path === '/body/key'));
    const zero = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'single', key: 'z', vector: [0, 0, 0] });
    assert.equal(zero.statusCode, 400);
  });

  it('answers 404 for a missing keyspace and 400 for a record with neither vector nor text', async () => {
    const res = await t.call('POST', '/v1/vector/write', { keyspace: 'missing_ks', table: 't', vector: [1] });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'keyspace_not_found');
    const empty = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 't' });
    assert.equal(empty.statusCode, 400);
  });

  it('answers 413 for a body over the limit and 415 for a non-JSON body', async () => {
    const res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'batch', vector: Array.from({ length: 40 }, () => Array.from({ length: 1000 }, () => 0.123456)) });
    assert.equal(res.statusCode, 413);
    assert.equal(res.json().code, 'payload_too_large');
    const txt = await t.app.inject({ method: 'POST', url: '/v1/vector/write', headers: { 'x-api-key': 'test-admin-key-0123456789abcdef', 'content-type': 'text/plain' }, payload: 'hello' });
    assert.equal(txt.statusCode, 415);
    assert.equal(txt.json().code, 'unsupported_media_type');
  });

  it('deletes by key and by filter, and 404s a missing vector', async () => {
    await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'del', vectors: Array.from({ length: 10 }, (_, i) => ({ key: `d${i}`, vector: [1, i + 1], metadata: { even: i % 2 === 0 } })) });
    let res = await t.call('POST', '/v1/vector/delete', { keyspace: ks, table: 'del', keys: ['d1', 'd3', 'nope'] });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().deleted, 2);
    res = await t.call('POST', '/v1/vector/delete', { keyspace: ks, table: 'del', filter: { even: true } });
    assert.equal(res.json().deleted, 5);
    assert.equal(await count('del'), 3);
    const gone = await t.call('POST', '/v1/vector/get', { keyspace: ks, table: 'del', key: 'd0' });
    assert.equal(gone.statusCode, 404);
    assert.equal(gone.json().code, 'vector_not_found');
    const s = await t.call('POST', '/v1/search/', { keyspace: ks, table: 'del', vector: [1, 1], final_top_k: 10 });
    assert.deepEqual(s.json().matches.map((m: { key: string }) => m.key).sort(), ['d5', 'd7', 'd9']);
  });
});

describe('POST /v1/vector/list pages through a table in key order', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake' })));
  after(() => t.close());

  const keys = Array.from({ length: 25 }, (_, i) => `k${String(i).padStart(2, '0')}`);
  const seen: string[] = [];

  it('returns every row exactly once across pages', async () => {
    await t.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table: 'paged', vectors: keys.map((key, i) => ({ key, vector: [1, i + 1] })) });
    let cursor: string | null = null;
    do {
      const res = await t.call('POST', '/v1/vector/list', { keyspace: 'default_keyspace', table: 'paged', limit: 10, ...(cursor ? { cursor } : {}) });
      assert.equal(res.statusCode, 200, res.body);
      const page = res.json();
      assert.ok(page.vectors.length <= 10);
      seen.push(...page.vectors.map((v: { key: string; vector: number[] }) => v.key));
      cursor = page.cursor;
    } while (cursor);
    assert.deepEqual([...seen].sort(), keys);
    const missing = await t.call('POST', '/v1/vector/list', { keyspace: 'default_keyspace', table: 'nope' });
    assert.equal(missing.statusCode, 404);
  });

  it('in key order', { skip: TEST_STORAGE === 'cassandra' ? 'Cassandra pages in token order (Murmur3 of the key): stable, not alphabetical' : false }, () => {
    assert.deepEqual(seen, keys);
  });
});
