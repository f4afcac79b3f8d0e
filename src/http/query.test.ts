import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './testing.ts';

const DIM = 8;

/** Cosine of two vectors in float32, as stored. */
function cosine(a: number[], b: number[]): number {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Math.fround(a[i]), y = Math.fround(b[i]);
    dot += x * y; na += x * x; nb += y * y;
  }
  return dot / Math.sqrt(na * nb);
}

interface Match { keyspace: string; table: string; key: string; score: number; metadata: Record<string, unknown> }

// Fake embedder: vectors are written relative to the query's own vector, so scores are known
// exactly; no meaning is checked here.
describe('POST /v1/query/ (every table of a keyspace, merged by score)', () => {
  let t: TestApp;
  let q: number[];
  const rows: { table: string; key: string; vector: number[] }[] = [];

  before(async () => {
    t = await startTestApp({ model: 'fake', fakeDimension: DIM });
    const gen = await t.call('GET', `/v1/generate/?text=${encodeURIComponent('where are the lighthouses')}`);
    assert.equal(gen.statusCode, 200, gen.body);
    q = gen.json().vector;
    // A direction orthogonal to q, so mixes of the two have known cosines.
    const r = Array.from({ length: DIM }, (_, i) => (i % 2 === 0 ? 1 : -1) * (i + 1));
    const rq = r.reduce((s, x, i) => s + x * q[i], 0) / q.reduce((s, x) => s + x * x, 0);
    const o = r.map((x, i) => x - rq * q[i]);
    const mix = (a: number, b: number) => q.map((x, i) => a * x + b * o[i]);

    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'docs' })).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'docs', table: 'notes', dimension: DIM })).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'docs', table: 'empty', dimension: DIM })).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'docs', table: 'wide', dimension: 3 })).statusCode, 200);
    rows.push(
      { table: 'vector', key: 'v-exact', vector: mix(1, 0) },
      { table: 'vector', key: 'v-half', vector: mix(1, 1) },
      { table: 'vector', key: 'v-far', vector: mix(0.1, 1) },
      { table: 'notes', key: 'n-close', vector: mix(1, 0.2) },
      { table: 'notes', key: 'n-mid', vector: mix(1, 0.6) },
      { table: 'notes', key: 'n-opposite', vector: mix(-1, 0.3) },
    );
    for (const table of ['vector', 'notes']) {
      const vectors = rows.filter((x) => x.table === table).map((x) => ({ key: x.key, vector: x.vector, metadata: { label: x.key.toUpperCase() } }));
      const res = await t.call('POST', '/v1/vector/batch', { keyspace: 'docs', table, vectors });
      assert.equal(res.statusCode, 200, res.body);
    }
    const wide = await t.call('POST', '/v1/vector/write', { keyspace: 'docs', table: 'wide', key: 'w', vector: [1, 2, 3] });
    assert.equal(wide.statusCode, 200, wide.body);
  });
  after(() => t?.close());

  it('searches both tables and merges their matches by cosine score, each naming its table', async () => {
    const res = await t.call('POST', '/v1/query/', { query: 'where are the lighthouses', selectedContainerId: 'docs', final_top_k: 5 });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json() as { query: string; selectedContainerId: string; matches: Match[]; skipped_tables: { table: string; dimension: number }[] };
    assert.equal(body.query, 'where are the lighthouses');
    assert.equal(body.selectedContainerId, 'docs');

    const want = rows.map((x) => ({ table: x.table, key: x.key, score: cosine(q, x.vector) })).sort((a, b) => b.score - a.score).slice(0, 5);
    assert.deepEqual(body.matches.map((m) => `${m.table}/${m.key}`), want.map((m) => `${m.table}/${m.key}`));
    // Sanity of the fixture: the merge interleaves the two tables.
    assert.deepEqual(body.matches.map((m) => m.key), ['v-exact', 'n-close', 'n-mid', 'v-half', 'v-far']);
    body.matches.forEach((m, i) => {
      assert.ok(Math.abs(m.score - want[i].score) < 1e-5, `${m.key}: ${m.score} vs ${want[i].score}`);
      assert.equal(m.keyspace, 'docs');
      assert.equal(m.metadata.label, m.key.toUpperCase());
    });
    // The 3-dimensional table cannot be searched with a 8-dimensional query: reported, not an error.
    assert.deepEqual(body.skipped_tables.map((s) => [s.table, s.dimension]), [['wide', 3]]);
  });

  it('defaults to 5 matches, and honours final_top_k across tables', async () => {
    const res = await t.call('POST', '/v1/query/', { query: 'where are the lighthouses', selectedContainerId: 'docs', final_top_k: 2 });
    assert.deepEqual(res.json().matches.map((m: Match) => m.key), ['v-exact', 'n-close']);
    const def = await t.call('POST', '/v1/query/', { query: 'where are the lighthouses', selectedContainerId: 'docs' });
    assert.equal(def.json().matches.length, 5);
  });

  it('searches the default keyspace when no container is selected', async () => {
    const w = await t.call('POST', '/v1/vector/write', { keyspace: 'default_keyspace', table: 'vector', key: 'home', vector: q });
    assert.equal(w.statusCode, 200, w.body);
    const res = await t.call('POST', '/v1/query/', { query: 'where are the lighthouses' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().selectedContainerId, 'default_keyspace');
    assert.deepEqual(res.json().matches.map((m: Match) => [m.keyspace, m.table, m.key]), [['default_keyspace', 'vector', 'home']]);
  });

  it('answers 404 for another user\'s keyspace, exactly as for a missing one, and serves the user\'s own', async () => {
    const other = await t.deps.storage.createUser({ name: 'Other', email: 'query-other@example.com' });
    const read = await t.makeKey('Read', ['*'], other.id);
    const theirs = await t.call('POST', '/v1/query/', { query: 'x', selectedContainerId: 'docs' }, read);
    assert.equal(theirs.statusCode, 404, theirs.body);
    assert.equal(theirs.json().code, 'keyspace_not_found');
    const missing = await t.call('POST', '/v1/query/', { query: 'x', selectedContainerId: 'nosuch' }, read);
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'keyspace_not_found');
    assert.equal(missing.json().detail.replace('nosuch', 'docs'), theirs.json().detail);
    // The default keyspace belongs to the administrator: another user does not see it either.
    assert.equal((await t.call('POST', '/v1/query/', { query: 'x' }, read)).statusCode, 404);

    const write = await t.makeKey('Write', ['*'], other.id);
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'mine' }, write)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/vector/write', { keyspace: 'mine', table: 'vector', key: 'm', vector: q }, write)).statusCode, 200);
    const own = await t.call('POST', '/v1/query/', { query: 'where are the lighthouses', selectedContainerId: 'mine' }, read);
    assert.equal(own.statusCode, 200, own.body);
    assert.deepEqual(own.json().matches.map((m: Match) => m.key), ['m']);
  });

  it('keeps a key inside its resources and needs a key', async () => {
    const onlyMine = await t.makeKey('Read', ['other']);
    const res = await t.call('POST', '/v1/query/', { query: 'x', selectedContainerId: 'docs' }, onlyMine);
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().code, 'forbidden');
    assert.equal((await t.call('POST', '/v1/query/', { query: 'x' }, null)).statusCode, 401);
  });

  it('validates the body', async () => {
    const cases: [unknown, string][] = [
      [{}, '/body/query'],
      [{ query: '' }, '/body/query'],
      [{ query: '   ' }, '/body/query'],
      [{ query: 'x', selectedContainerId: 'Bad-Name' }, '/body/selectedContainerId'],
      [{ query: 'x', final_top_k: 0 }, '/body/final_top_k'],
      [{ query: 'x', extra: 1 }, '/body/extra'],
    ];
    for (const [body, path] of cases) {
      const res = await t.call('POST', '/v1/query/', body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
      assert.ok(res.json().errors.some((e: { path: string }) => e.path === path), `${JSON.stringify(body)}: ${res.body}`);
    }
    const model = await t.call('POST', '/v1/query/', { query: 'x', model_name: 'no-such-model' });
    assert.equal(model.statusCode, 400);
    assert.equal(model.json().code, 'unknown_model');
  });
});
