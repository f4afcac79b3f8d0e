import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { encodeFloat32Base64 } from '../platform/float32-base64.ts';
import { startTestApp, type TestApp } from './testing.ts';

/** Deterministic PRNG so a failure reproduces. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

function bruteForce(metric: string, q: number[], rows: { key: string; vector: number[] }[]) {
  const score = (v: number[]) => {
    let dot = 0, nq = 0, nv = 0, l2 = 0;
    for (let i = 0; i < q.length; i++) {
      // float32 storage: score what the service stores
      const a = Math.fround(q[i]), b = Math.fround(v[i]);
      dot += a * b; nq += a * a; nv += b * b; l2 += (a - b) ** 2;
    }
    if (metric === 'cosine') return dot / Math.sqrt(nq * nv);
    if (metric === 'dot_product') return dot;
    return Math.sqrt(l2);
  };
  const scored = rows.map((r) => ({ key: r.key, score: score(r.vector) }));
  scored.sort((x, y) => (metric === 'euclidean' ? x.score - y.score : y.score - x.score));
  return scored;
}

describe('POST /v1/search/ exactness (vectors, fake embedder: no meaning checked)', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake' })));
  after(() => t.close());

  for (const metric of ['cosine', 'dot_product', 'euclidean']) {
    it(`is exact for ${metric} when initial_top_k >= rows`, async () => {
      const rand = rng(metric.length * 7919);
      const dim = 32;
      const rows = Array.from({ length: 300 }, (_, i) => ({ key: `k${i}`, vector: Array.from({ length: dim }, rand) }));
      const table = `exact_${metric}`;
      let res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'default_keyspace', table, dimension: dim, metric });
      assert.equal(res.statusCode, 200, res.body);
      res = await t.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table, vectors: rows });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().written, 300);

      for (let qi = 0; qi < 5; qi++) {
        const q = Array.from({ length: dim }, rand);
        res = await t.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table, vector: q, metric, initial_top_k: 300, final_top_k: 20 });
        assert.equal(res.statusCode, 200, res.body);
        const got = res.json().matches as { key: string; score: number }[];
        const want = bruteForce(metric, q, rows).slice(0, 20);
        assert.deepEqual(got.map((m) => m.key), want.map((m) => m.key));
        got.forEach((m, i) => assert.ok(Math.abs(m.score - want[i].score) < 1e-5, `${m.key}: ${m.score} vs ${want[i].score}`));
      }
    });
  }

  it('gives the same matches and scores for vector_base64 as for the same vector as an array', async () => {
    const rand = rng(4242);
    const dim = 48;
    const table = 'by_base64';
    const rows = Array.from({ length: 200 }, (_, i) => ({ key: `r${i}`, vector: Array.from({ length: dim }, rand), metadata: { i } }));
    let res = await t.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table, vectors: rows });
    assert.equal(res.statusCode, 200, res.body);
    for (const metric of ['cosine', 'dot_product', 'euclidean']) {
      for (let qi = 0; qi < 3; qi++) {
        const q = Float32Array.from({ length: dim }, rand);
        const common = { keyspace: 'default_keyspace', table, metric, final_top_k: 15, include_vector: true };
        const asArray = await t.call('POST', '/v1/search/', { ...common, vector: Array.from(q) });
        res = await t.call('POST', '/v1/search/', { ...common, vector_base64: encodeFloat32Base64(q) });
        assert.equal(asArray.statusCode, 200, asArray.body);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.json().matches.length, 15);
        assert.deepEqual(res.json().matches, asArray.json().matches);
        assert.equal(res.json().query, null);
        assert.ok(res.json().matches.every((m: { vector: unknown }) => Array.isArray(m.vector)));
      }
    }
  });

  it('takes an ef (graph effort) and answers the same exact matches whatever its value, when the table is scanned exactly', async () => {
    const rand = rng(4242);
    const rows = Array.from({ length: 50 }, (_, i) => ({ key: `e${i}`, vector: Array.from({ length: 8 }, rand) }));
    let res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'default_keyspace', table: 'effort', dimension: 8, metric: 'cosine' });
    assert.equal(res.statusCode, 200, res.body);
    res = await t.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table: 'effort', vectors: rows });
    assert.equal(res.statusCode, 200, res.body);
    const q = Array.from({ length: 8 }, rand);
    const want = bruteForce('cosine', q, rows).slice(0, 5).map((m) => m.key);
    for (const ef of [1, 64, 4096]) {
      res = await t.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table: 'effort', vector: q, ef, initial_top_k: 10, final_top_k: 5 });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json().matches.map((m: { key: string }) => m.key), want);
    }
  });

  it('echoes every resolved default', async () => {
    const res = await t.call('POST', '/v1/search/', { query: 'anything', keyspace: 'default_keyspace', table: 'vector' });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.model_name, 'all-MiniLM-L6-v2');
    assert.equal(body.metric, 'cosine');
    assert.equal(body.initial_top_k, 1_000_000);
    assert.equal(body.final_top_k, 5);
    assert.equal(body.query, 'anything');
    assert.deepEqual(body.matches, []);
  });

  it('accepts the metric alias "cosine similarity" and answers the canonical name', async () => {
    const res = await t.call('POST', '/v1/search/', { query: 'x', keyspace: 'default_keyspace', table: 'vector', metric: 'cosine similarity' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().metric, 'cosine');
  });

  it('filters by metadata and includes vectors on request', async () => {
    const table = 'filtered';
    const vectors = Array.from({ length: 40 }, (_, i) => ({ key: `f${i}`, vector: [1, i / 40, 0.5], metadata: { group: i % 2 === 0 ? 'even' : 'odd', n: i } }));
    let res = await t.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table, vectors });
    assert.equal(res.statusCode, 200, res.body);
    res = await t.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table, vector: [1, 0, 0.5], final_top_k: 50, initial_top_k: 50, filter: { group: 'odd', n: { $gte: 21 } }, include_vector: true });
    assert.equal(res.statusCode, 200, res.body);
    const matches = res.json().matches;
    assert.equal(matches.length, 10);
    for (const m of matches) {
      assert.equal(m.metadata.group, 'odd');
      assert.ok(m.metadata.n >= 21);
      assert.equal(m.vector.length, 3);
    }
  });

  it('joins the source metadata record into matches', async () => {
    const table = 'sourced';
    await t.call('POST', '/v1/vector/write', { keyspace: 'default_keyspace', table, key: 'doc#0', vector: [1, 0], metadata: { source_file: 'doc.txt' } });
    let res = await t.call('POST', '/v1/metadata/write', { keyspace: 'default_keyspace', table, source_file: 'doc.txt', source_type: 'txt', processing_details: 'chunks=1' });
    assert.equal(res.statusCode, 200, res.body);
    res = await t.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table, vector: [1, 0.1] });
    const m = res.json().matches[0];
    assert.equal(m.key, 'doc#0');
    assert.equal(m.metadata.source_type, 'txt');
    assert.equal(m.metadata.processing_details, 'chunks=1');
  });

  describe('rejects bad requests with named fields', () => {
    const base = { keyspace: 'default_keyspace', table: 'vector' };
    const cases: [string, unknown, number, string, string?][] = [
      ['missing query and vector', { ...base }, 400, 'validation_failed', '/body/query'],
      ['both query and vector', { ...base, query: 'a', vector: [1] }, 400, 'validation_failed', '/body/vector'],
      ['missing keyspace', { query: 'a', table: 'vector' }, 400, 'validation_failed', '/body/keyspace'],
      ['bad keyspace name', { query: 'a', keyspace: 'Bad-Name', table: 'vector' }, 400, 'validation_failed', '/body/keyspace'],
      ['final_top_k > initial_top_k', { ...base, query: 'a', initial_top_k: 3, final_top_k: 4 }, 400, 'validation_failed', '/body/final_top_k'],
      ['final_top_k over the limit', { ...base, query: 'a', final_top_k: 1001 }, 400, 'validation_failed', '/body/final_top_k'],
      ['initial_top_k not an integer', { ...base, query: 'a', initial_top_k: 'ten' }, 400, 'validation_failed', '/body/initial_top_k'],
      ['ef of 0', { ...base, query: 'a', ef: 0 }, 400, 'validation_failed', '/body/ef'],
      ['ef over its bound', { ...base, query: 'a', ef: 4097 }, 400, 'validation_failed', '/body/ef'],
      ['ef not an integer', { ...base, query: 'a', ef: 12.5 }, 400, 'validation_failed', '/body/ef'],
      ['ef with a lexical search', { ...base, query: 'a', mode: 'lexical', ef: 64 }, 400, 'validation_failed', '/body/ef'],
      ['unknown metric', { ...base, query: 'a', metric: 'manhattan' }, 400, 'unknown_metric', '/body/metric'],
      ['unknown model', { ...base, query: 'a', model_name: 'gpt-9' }, 400, 'unknown_model'],
      ['unknown field', { ...base, query: 'a', topk: 3 }, 400, 'validation_failed', '/body/topk'],
      ['bad filter operator', { ...base, query: 'a', filter: { a: { $regex: 'x' } } }, 400, 'validation_failed'],
      ['wrong-dimension vector', { ...base, vector: [1, 2, 3] }, 400, 'dimension_mismatch'],
      ['wrong-dimension vector_base64', { ...base, vector_base64: encodeFloat32Base64([1, 2, 3]) }, 400, 'dimension_mismatch', '/body/vector_base64'],
      ['both vector and vector_base64', { ...base, vector: [1, 2, 3], vector_base64: encodeFloat32Base64([1, 2, 3]) }, 400, 'validation_failed', '/body/vector_base64'],
      ['both query and vector_base64', { ...base, query: 'a', vector_base64: encodeFloat32Base64([1]) }, 400, 'validation_failed', '/body/vector_base64'],
      ['vector_base64 not base64', { ...base, vector_base64: 'AAAA AAAA' }, 400, 'validation_failed', '/body/vector_base64'],
      ['vector_base64 not whole float32s', { ...base, vector_base64: Buffer.alloc(6).toString('base64') }, 400, 'validation_failed', '/body/vector_base64'],
      ['vector_base64 holding NaN', { ...base, vector_base64: Buffer.from([0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x3f]).toString('base64') }, 400, 'validation_failed', '/body/vector_base64'],
      ['vector_base64 holding Infinity', { ...base, vector_base64: Buffer.from([0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x7f]).toString('base64') }, 400, 'validation_failed', '/body/vector_base64'],
      ['zero vector_base64 under cosine', { ...base, vector_base64: encodeFloat32Base64(new Float32Array(384)) }, 400, 'validation_failed', '/body/vector_base64'],
      ['missing keyspace', { query: 'a', keyspace: 'nope', table: 'vector' }, 404, 'keyspace_not_found'],
      ['missing table', { query: 'a', keyspace: 'default_keyspace', table: 'nope' }, 404, 'table_not_found'],
    ];
    for (const [name, body, status, code, path] of cases) {
      it(name, async () => {
        const res = await t.call('POST', '/v1/search/', body);
        assert.equal(res.statusCode, status, res.body);
        assert.match(res.headers['content-type'] as string, /application\/problem\+json/);
        const p = res.json();
        assert.equal(p.code, code);
        assert.equal(p.status, status);
        assert.ok(p.type && p.title && p.detail && p.instance);
        if (path) assert.ok(p.errors.some((e: { path: string }) => e.path === path), JSON.stringify(p.errors));
      });
    }
    it('names every bad field at once', async () => {
      const res = await t.call('POST', '/v1/search/', { keyspace: 'BAD', table: 7, final_top_k: 0 });
      assert.equal(res.statusCode, 400);
      const paths = res.json().errors.map((e: { path: string }) => e.path);
      for (const p of ['/body/keyspace', '/body/table', '/body/final_top_k']) assert.ok(paths.includes(p), paths.join());
    });
    it('an unknown model lists the valid ones', async () => {
      const res = await t.call('POST', '/v1/search/', { ...base, query: 'a', model_name: 'nope' });
      assert.ok(res.json().valid.includes('all-MiniLM-L6-v2'));
    });
    it('refuses an unknown model also when searching by vector, naming the field', async () => {
      const vector = Array.from({ length: 384 }, (_, i) => (i === 0 ? 1 : 0));
      const res = await t.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table: 'vector', vector, model_name: 'nope' });
      assert.equal(res.json().code, 'unknown_model', res.body);
      assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/body/model_name']);
    });
    it('names an unknown metric and model beside the other bad fields', async () => {
      const res = await t.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table: 'vector', metric: 'manhattan', model_name: 'nope', initial_top_k: 2, final_top_k: 3, filter: { a: { $bad: 1 } } });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().code, 'validation_failed');
      const paths = res.json().errors.map((e: { path: string }) => e.path).sort();
      assert.deepEqual(paths, ['/body/filter/a/$bad', '/body/final_top_k', '/body/metric', '/body/model_name', '/body/query', '/body/vector']);
    });
    it('refuses a filter of more than 256 conditions as bad input (SQLite fails near 1,000)', async () => {
      const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i]));
      for (const filter of [wide(257), { $or: Array.from({ length: 1_100 }, (_, i) => ({ f: i })) }]) {
        for (const url of ['/v1/search/', '/v1/vector/count', '/v1/vector/delete']) {
          const res = await t.call('POST', url, { ...(url === '/v1/search/' ? { query: 'a' } : {}), keyspace: 'default_keyspace', table: 'vector', filter });
          assert.equal(res.statusCode, 400, `${url}: ${res.body.slice(0, 200)}`);
          assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/body/filter']);
        }
      }
      // At the limit the query runs.
      const res = await t.call('POST', '/v1/vector/count', { keyspace: 'default_keyspace', table: 'vector', filter: wide(256) });
      assert.equal(res.statusCode, 200, res.body.slice(0, 300));
    });
  });
});

describe('POST /v1/search/ meaning (real model)', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'real' })));
  after(() => t.close());

  it('finds the cat on the sofa for a kitten on a couch', async () => {
    const texts = {
      cat: 'A cat is lying on a sofa.',
      stocks: 'The stock market fell sharply after the interest rate decision.',
      bread: 'Knead the dough and let the bread rise for an hour before baking.',
      rust: 'Rust programs are compiled ahead of time with cargo.',
    };
    const res = await t.call('POST', '/v1/vector/batch', {
      keyspace: 'default_keyspace',
      table: 'vector',
      vectors: Object.entries(texts).map(([key, text]) => ({ key, text })),
    });
    assert.equal(res.statusCode, 200, res.body);
    const s = await t.call('POST', '/v1/search/', { query: 'a kitten sleeping on the couch', keyspace: 'default_keyspace', table: 'vector' });
    assert.equal(s.statusCode, 200, s.body);
    const matches = s.json().matches;
    assert.equal(matches[0].key, 'cat');
    assert.equal(matches[0].metadata.text, texts.cat);
    assert.ok(matches[0].score > matches[1].score + 0.1, JSON.stringify(matches.map((m: { key: string; score: number }) => [m.key, m.score])));
  });
});
