import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { encodeFloat32Base64 } from '../platform/float32-base64.ts';
import { DEFAULT_LIMITS } from '../config/config.ts';
import { fromBase64Float32 } from '../service/validate.ts';
import { ADMIN_KEY, startTestApp, TEST_STORAGE, type TestApp } from './testing.ts';

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

/** Base64 of raw 32-bit patterns, little-endian (for NaN and Infinity, which arrays cannot carry). */
const bitsBase64 = (...bits: number[]): string => {
  const b = Buffer.alloc(bits.length * 4);
  bits.forEach((x, i) => b.writeUInt32LE(x >>> 0, i * 4));
  return b.toString('base64');
};

describe('vector_base64: float32 bytes instead of JSON numbers', () => {
  let t: TestApp;
  const ks = 'default_keyspace';
  before(async () => (t = await startTestApp({ model: 'fake', limits: { batchItems: 50 } })));
  after(() => t.close());

  const count = async (table: string) => {
    const res = await t.call('POST', '/v1/vector/count', { keyspace: ks, table });
    if (res.statusCode === 404) return 0;
    assert.equal(res.statusCode, 200, res.body);
    return res.json().count as number;
  };
  const get = async (table: string, key: string) => {
    const res = await t.call('POST', '/v1/vector/get', { keyspace: ks, table, key, include_vector: true });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { vector: number[]; metadata: object; text: string | null };
  };
  const problem = (res: { statusCode: number; body: string; json(): any }, code: string, path: string) => {
    assert.equal(res.statusCode, 400, res.body);
    const p = res.json();
    assert.equal(p.code, code, res.body);
    assert.ok(p.errors.some((e: { path: string }) => e.path === path), `${path} not in ${JSON.stringify(p.errors)}`);
    return p;
  };

  // Values whose decimal form would round differently, subnormals, and the float32 extremes (on
  // Cassandra, whose vector index takes squared norms up to 1e19, the largest values are 1e9).
  const big = process.env.VSS_TEST_STORAGE === 'cassandra' ? 1e9 : 3.4028234663852886e38;
  const special = [Math.PI, -1 / 3, 1e-40 /* subnormal */, 1.401298464324817e-45, big, -big, 0.1, -0];
  const vectorOf = (i: number, dim: number) => {
    const v = new Float32Array(dim);
    for (let d = 0; d < dim; d++) v[d] = d < special.length && i === 0 ? special[d] : Math.sin(i * 31 + d * 7) * (1 + d);
    return v;
  };

  it('a batch written as vector_base64 reads back with exactly the float32 values written', async () => {
    const dim = 24;
    const written = Array.from({ length: 30 }, (_, i) => vectorOf(i, dim));
    const vectors = written.map((v, i) => ({ key: `b${i}`, vector_base64: encodeFloat32Base64(v), metadata: { i } }));
    const res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'b64', vectors });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().written, 30);
    assert.equal(await count('b64'), 30);
    for (let i = 0; i < written.length; i++) {
      const got = await get('b64', `b${i}`);
      assert.deepEqual(got.metadata, { i });
      // Stored bit for bit (-0 included) ...
      const row = await t.deps.storage.getVector(ks, 'b64', `b${i}`);
      assert.deepEqual(Buffer.from(row!.vector.buffer, row!.vector.byteOffset, row!.vector.byteLength), Buffer.from(written[i].buffer), `b${i}`);
      // ... and served as the same float32 values (JSON has no -0: it reads back as 0).
      assert.deepEqual(got.vector, Array.from(written[i], (x) => x + 0));
      assert.deepEqual(Buffer.from(Float32Array.from(got.vector).buffer), Buffer.from(Float32Array.from(written[i], (x) => x + 0).buffer));
    }
    const list = await t.call('POST', '/v1/vector/list', { keyspace: ks, table: 'b64', limit: 50 });
    assert.equal(list.statusCode, 200, list.body);
    assert.ok(list.json().vectors.every((v: { vector: unknown }) => Array.isArray(v.vector)), 'responses keep number arrays');
  });

  it('mixes vector_base64, vector and text records in one batch, and takes it in /v1/vector/write', async () => {
    const v = vectorOf(7, 384);
    let res = await t.call('POST', '/v1/vector/batch', {
      keyspace: ks,
      table: 'mixed',
      vectors: [{ key: 'b', vector_base64: encodeFloat32Base64(v) }, { key: 'a', vector: Array.from(v) }, { key: 't', text: 'hello' }],
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual((await get('mixed', 'b')).vector, (await get('mixed', 'a')).vector);
    res = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'mixed', key: 'w', vector_base64: encodeFloat32Base64(v), text: 'kept, not embedded' });
    assert.equal(res.statusCode, 200, res.body);
    const w = await get('mixed', 'w');
    assert.deepEqual(w.vector, Array.from(v));
    assert.equal(w.text, 'kept, not embedded');
  });

  it('refuses what is not standard base64, naming each field (schema)', async () => {
    const ok = encodeFloat32Base64([1, 2, 3]);
    // Other characters, bad padding, whitespace, a line of junk after a good one, the URL-safe
    // alphabet, non-zero unused trailing bits, empty.
    const bad = ['not base64!', 'AAAAAA=', 'AAAA AAA', 'AAAA\nAAAA', 'AAAAAAAA\n!!!!', '_-__AAAA', 'AAAAAAB=', ''];
    const vectors = [{ key: 'ok', vector_base64: ok }, ...bad.map((vector_base64, i) => ({ key: `bad${i}`, vector_base64 }))];
    const res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'refused', vectors });
    const p = problem(res, 'validation_failed', '/body/vectors/1/vector_base64');
    assert.match(p.errors.find((e: { path: string }) => e.path === '/body/vectors/1/vector_base64').message, /must be standard base64/);
    for (let i = 1; i <= bad.length; i++) assert.ok(p.errors.some((e: { path: string }) => e.path === `/body/vectors/${i}/vector_base64`), `${i}: ${JSON.stringify(p.errors)}`);
    assert.ok(!p.errors.some((e: { path: string }) => e.path === '/body/vectors/0/vector_base64'));
    problem(await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'refused', vector_base64: 'AA==AA==' }), 'validation_failed', '/body/vector_base64');
    // Checked with the schema: named together with the other schema errors.
    const both = await t.call('POST', '/v1/vector/write', { keyspace: 'Bad-Name', table: 'refused', vector_base64: 'AAAA\n!!!!' });
    problem(both, 'validation_failed', '/body/vector_base64');
    problem(both, 'validation_failed', '/body/keyspace');
    assert.equal(await count('refused'), 0);
  });

  it('refuses more values than the maximum dimension (schema maxLength)', async () => {
    const tooLong = encodeFloat32Base64(new Float32Array(DEFAULT_LIMITS.maxDimension + 1).fill(1));
    problem(await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'refused', vector_base64: tooLong }), 'validation_failed', '/body/vector_base64');
    const max = encodeFloat32Base64(new Float32Array(DEFAULT_LIMITS.maxDimension).fill(1));
    const res = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'widest', vector_base64: max });
    assert.equal(res.statusCode, 200, res.body);
  });

  it('refuses both vector and vector_base64 in one record', async () => {
    const res = await t.call('POST', '/v1/vector/batch', {
      keyspace: ks,
      table: 'refused',
      vectors: [{ key: 'ok', vector: [1, 2, 3] }, { key: 'both', vector: [1, 2, 3], vector_base64: encodeFloat32Base64([1, 2, 3]) }],
    });
    problem(res, 'validation_failed', '/body/vectors/1/vector_base64');
    problem(await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'refused', vector: [1], vector_base64: encodeFloat32Base64([1]) }), 'validation_failed', '/body/vector_base64');
    assert.equal(await count('refused'), 0);
  });

  it('refuses byte lengths that are not whole float32s and NaN/Infinity bit patterns, every bad record at once', async () => {
    const vectors = [
      { key: 'ok', vector_base64: encodeFloat32Base64([1, 2, 3]) },
      { key: 'six-bytes', vector_base64: Buffer.alloc(6, 1).toString('base64') },
      { key: 'nan', vector_base64: bitsBase64(0x3f800000, 0x7fc00000, 0x3f800000) },
      { key: 'signalling-nan', vector_base64: bitsBase64(0x7f800001, 0x3f800000, 0x3f800000) },
      { key: 'inf', vector_base64: bitsBase64(0x3f800000, 0x3f800000, 0x7f800000) },
      { key: '-inf', vector_base64: bitsBase64(0xff800000, 0x3f800000, 0x3f800000) },
      { key: 'five-bytes', vector_base64: 'AAAAAAA=' },
    ];
    const res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'refused', vectors });
    const p = problem(res, 'validation_failed', '/body/vectors/1/vector_base64');
    const byPath = new Map<string, string>(p.errors.map((e: { path: string; message: string }) => [e.path, e.message]));
    assert.match(byPath.get('/body/vectors/1/vector_base64')!, /6 bytes.*multiple of 4/);
    assert.match(byPath.get('/body/vectors/2/vector_base64')!, /value 1 is NaN/);
    assert.match(byPath.get('/body/vectors/3/vector_base64')!, /value 0 is NaN/);
    assert.match(byPath.get('/body/vectors/4/vector_base64')!, /value 2 is Infinity/);
    assert.match(byPath.get('/body/vectors/5/vector_base64')!, /value 0 is -Infinity/);
    assert.match(byPath.get('/body/vectors/6/vector_base64')!, /5 bytes/);
    assert.ok(!byPath.has('/body/vectors/0/vector_base64'));
    problem(await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'refused', vector_base64: bitsBase64(0x7fc00000) }), 'validation_failed', '/body/vector_base64');
    assert.equal(await count('refused'), 0);
  });

  it('refuses a dimension other than the table\'s with dimension_mismatch, writing nothing', async () => {
    let res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'dims', vectors: [{ key: 'first', vector_base64: encodeFloat32Base64([1, 2, 3, 4]) }] });
    assert.equal(res.statusCode, 200, res.body);
    res = await t.call('POST', '/v1/vector/batch', {
      keyspace: ks,
      table: 'dims',
      vectors: [{ key: 'ok', vector_base64: encodeFloat32Base64([4, 3, 2, 1]) }, { key: 'array-ok', vector: [1, 1, 1, 1] }, { key: 'short', vector_base64: encodeFloat32Base64([1, 2, 3]) }],
    });
    const p = problem(res, 'dimension_mismatch', '/body/vectors/2/vector_base64');
    assert.match(p.errors.find((e: { path: string }) => e.path === '/body/vectors/2/vector_base64').message, /3 dimensions.*holds 4/);
    // Within one new batch, records disagreeing with the first one.
    res = await t.call('POST', '/v1/vector/batch', { keyspace: ks, table: 'dims_new', vectors: [{ key: 'a', vector: [1, 2] }, { key: 'b', vector_base64: encodeFloat32Base64([1, 2, 3]) }] });
    problem(res, 'dimension_mismatch', '/body/vectors/1/vector_base64');
    problem(await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'dims', vector_base64: encodeFloat32Base64([1, 2]) }), 'dimension_mismatch', '/body/vector_base64');
    const zero = await t.call('POST', '/v1/vector/write', { keyspace: ks, table: 'dims', vector_base64: encodeFloat32Base64([0, 0, 0, 0]) });
    assert.equal(zero.statusCode, 400, zero.body);
    assert.ok(zero.json().errors.some((e: { path: string; message: string }) => e.path === '/body/vector_base64' && /zero vector/.test(e.message)), zero.body);
    assert.equal(await count('dims'), 1);
    assert.equal(await count('dims_new'), 0);
  });

  it('the service decodes strictly even without the schema in front', () => {
    const limits = DEFAULT_LIMITS;
    const errors: { path: string; message: string }[] = [];
    assert.deepEqual(Array.from(fromBase64Float32(encodeFloat32Base64([1.5, -2]), '/v', errors, limits)!), [1.5, -2]);
    for (const s of ['AAAA\nAAAA', 'AAAA-_AA', 'AAAAAAA', 'AAAAAA=A', 'AAAAAAAAAAAAAAB=', 'AAAAAAAAAAAA!!!!', 'AAAAAAAAAAAAAA-_', 'AAAAAAAAAAAAAAA\n', '']) {
      errors.length = 0;
      assert.equal(fromBase64Float32(s, '/v', errors, limits), null, JSON.stringify(s));
      assert.equal(errors.length, 1);
      assert.equal(errors[0].path, '/v');
    }
    errors.length = 0;
    assert.equal(fromBase64Float32(encodeFloat32Base64([1, 2, 3]), '/v', errors, { ...limits, maxDimension: 2 }), null);
    assert.match(errors[0].message, /1 to 2/);
  });
});

describe('bad writes are named in one answer, and none can break a table', () => {
  let t: TestApp;
  const ks = 'default_keyspace';
  before(async () => (t = await startTestApp({ model: 'fake', fakeDimension: 2 })));
  after(() => t.close());

  const write = (body: object) => t.call('POST', '/v1/vector/write', { keyspace: ks, ...body });
  const batch = (body: object) => t.call('POST', '/v1/vector/batch', { keyspace: ks, ...body });
  const paths = (res: { json(): { errors?: { path: string }[] } }) => (res.json().errors ?? []).map((e) => e.path).sort();
  // As JSON text: a test's own JSON.stringify overflows the stack long before 20,000 levels.
  const nested = (depth: number): string => '[{"x":'.repeat(depth / 2) + '1' + '}]'.repeat(depth / 2);
  const writeRaw = (json: string) =>
    t.app.inject({ method: 'POST', url: '/v1/vector/write', headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' }, payload: json });

  it('refuses metadata nested past 64 levels (SQLite filters fail at 1,000; JSON.stringify overflows deeper)', async () => {
    const body = (key: string, depth: number) => `{"keyspace":"${ks}","table":"deep","key":"${key}","vector":[1,1],"metadata":{"n":1,"x":${nested(depth)}}}`;
    const ok = await writeRaw(body('ok', 62));
    assert.equal(ok.statusCode, 200, ok.body);
    for (const depth of [64, 1_000, 20_000]) {
      const res = await writeRaw(body(`d${depth}`, depth));
      assert.equal(res.statusCode, 400, `depth ${depth}: ${res.body.slice(0, 300)}`);
      assert.equal(res.json().code, 'validation_failed');
      assert.deepEqual(paths(res), ['/body/metadata']);
    }
    // The table's filtered queries still run.
    const counted = await t.call('POST', '/v1/vector/count', { keyspace: ks, table: 'deep', filter: { n: 1 } });
    assert.equal(counted.statusCode, 200, counted.body);
    assert.equal(counted.json().count, 1);
  });

  it('refuses keys, texts and metadata record fields with a lone UTF-16 surrogate (they have no UTF-8 form)', async () => {
    const res = await batch({ table: 'uni', vectors: [{ key: 'a\ud800', vector: [1, 1] }, { key: 'fine', text: 'b\udc00' }, { key: 'ok 😀', vector: [1, 2] }] });
    assert.equal(res.statusCode, 400, res.body);
    assert.deepEqual(paths(res), ['/body/vectors/0/key', '/body/vectors/1/text']);
    const meta = await t.call('POST', '/v1/metadata/batch', [
      { keyspace: ks, table: 'uni', source_file: 'a.txt' },
      { keyspace: ks, table: 'uni', source_file: 'b\ud800.txt', raw_value: 'x\udfff' },
    ]);
    assert.equal(meta.statusCode, 400, meta.body);
    assert.deepEqual(paths(meta), ['/body/1/raw_value', '/body/1/source_file']);
  });

  it('names every bad item of a batch, the dimension checks included', async () => {
    assert.equal((await write({ table: 'dims', key: 'first', vector: [1, 2] })).statusCode, 200);
    const res = await batch({ table: 'dims', vectors: [{ key: 'a', vector: [1, 2] }, { key: 'b', vector: [1, 2, 3] }, { key: 'c', vector: [0, 0] }, { key: 'é'.repeat(300), vector: [1, 2] }] });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'validation_failed');
    assert.deepEqual(paths(res), ['/body/vectors/1/vector', '/body/vectors/2/vector', '/body/vectors/3/key']);
    // Only dimensions wrong: their own code, every item named.
    const dims = await batch({ table: 'dims', vectors: [{ key: 'a', vector: [1, 2, 3] }, { key: 'b', vector: [1] }] });
    assert.equal(dims.json().code, 'dimension_mismatch');
    assert.deepEqual(paths(dims), ['/body/vectors/0/vector', '/body/vectors/1/vector']);
    // A zero vector alone is invalid input, not a dimension mismatch.
    const zero = await write({ table: 'dims', key: 'z', vector: [0, 0] });
    assert.equal(zero.json().code, 'validation_failed');
    assert.deepEqual(paths(zero), ['/body/vector']);
    assert.equal((await t.call('POST', '/v1/vector/count', { keyspace: ks, table: 'dims' })).json().count, 1);
  });

  it('answers a batch of wrong dimensions the same on every backend: {expected, actual}, every item named', async () => {
    // The service checks against the table before storage, so this exact body is the answer on
    // embedded and on Cassandra (VSS_TEST_STORAGE=cassandra runs this file there).
    assert.equal((await write({ table: 'same_answer', key: 'first', vector: [1, 2, 3, 4] })).statusCode, 200);
    const res = await batch({
      table: 'same_answer',
      vectors: [{ key: 'a', vector: [1, 2, 3] }, { key: 'b', vector: [1, 2, 3, 4] }, { key: 'c', vector_base64: encodeFloat32Base64([1, 2, 3, 4, 5]) }, { key: 'd', vector: [1] }],
    });
    assert.equal(res.statusCode, 400, res.body);
    const { code, expected, actual, errors } = res.json();
    assert.deepEqual({ code, expected, actual, errors }, {
      code: 'dimension_mismatch',
      expected: 4,
      actual: 3,
      errors: [
        { path: '/body/vectors/0/vector', message: 'has 3 dimensions; the table holds 4' },
        { path: '/body/vectors/2/vector_base64', message: 'has 5 dimensions; the table holds 4' },
        { path: '/body/vectors/3/vector', message: 'has 1 dimensions; the table holds 4' },
      ],
    });
    // A search: the same shape.
    const q = await t.call('POST', '/v1/search/', { keyspace: ks, table: 'same_answer', vector: [1, 2] });
    assert.equal(q.statusCode, 400, q.body);
    assert.deepEqual(
      { code: q.json().code, expected: q.json().expected, actual: q.json().actual, errors: q.json().errors },
      { code: 'dimension_mismatch', expected: 4, actual: 2, errors: [{ path: '/body/vector', message: 'has 2 dimensions; the table holds 4' }] },
    );
    assert.equal((await t.call('POST', '/v1/vector/count', { keyspace: ks, table: 'same_answer' })).json().count, 1);
  });

  it('names at most 100 bad items, and says it stopped', async () => {
    assert.equal((await write({ table: 'many_bad', key: 'first', vector: [1, 2] })).statusCode, 200);
    const res = await batch({ table: 'many_bad', vectors: Array.from({ length: 120 }, (_, i) => ({ key: `k${i}`, vector: [1, 2, 3] })) });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'dimension_mismatch');
    assert.equal(res.json().errors.length, 100);
    assert.equal(res.json().errors_truncated, true);
  });

  it("points into the bare `vector` form as it was sent", async () => {
    const res = await batch({ table: 'bare', vector: [[1, 2], [1e39, 2], [1, 2, 3]] });
    assert.equal(res.statusCode, 400, res.body);
    assert.deepEqual(paths(res), ['/body/vector/1/0', '/body/vector/2']);
    const dims = await batch({ table: 'bare', vector: [[1, 2], [1, 2, 3]] });
    assert.equal(dims.json().code, 'dimension_mismatch');
    assert.deepEqual(paths(dims), ['/body/vector/1']);
  });

  it('refuses an unknown model_name even when every record brings its vector, naming the field', async () => {
    const res = await write({ table: 'models', key: 'a', vector: [1, 2], model_name: 'no-such-model' });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'unknown_model');
    assert.deepEqual(paths(res), ['/body/model_name']);
    assert.ok(res.json().valid.includes('all-MiniLM-L6-v2'));
    // Text into a table of another dimension: the model is what does not fit.
    assert.equal((await write({ table: 'three', key: 'a', vector: [1, 2, 3] })).statusCode, 200);
    const text = await batch({ table: 'three', vectors: [{ text: 'hello' }] });
    assert.equal(text.json().code, 'dimension_mismatch');
    assert.deepEqual(paths(text), ['/body/model_name']);
  });

  it('takes an empty JSON body as no body on the routes that need none', async () => {
    for (const url of ['/v1/keyspaces/create', '/v1/keyspaces/autoprovision']) {
      const res = await t.app.inject({ method: 'POST', url, headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' }, payload: '' });
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
      assert.match(res.json().keyspace, /^ks_/);
    }
    // Where a body is required, its absence is named.
    const res = await t.app.inject({ method: 'POST', url: '/v1/vector/write', headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' }, payload: '' });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'validation_failed');
  });
});
