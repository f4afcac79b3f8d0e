/**
 * TTL through the API: `ttl_seconds` per record and per request, a table's `default_ttl_seconds`
 * (at create, changed later), `expires_at` in get and list answers, bad values named, and an
 * expired row gone from get, list, count and every search mode. Embedded: a clock the test moves;
 * Cassandra: the engine's, waited for.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock, realClock, type TestClock } from '../storage/contract-ttl.case.ts';
import { startTestApp, TEST_STORAGE, type TestApp } from './testing.ts';

// Fake embedder: these tests check expiry, not meaning.
describe('TTL over HTTP', () => {
  let t: TestApp;
  const clock: TestClock = TEST_STORAGE === 'cassandra' ? realClock : new ManualClock();
  const KS = 'default_keyspace';
  before(async () => (t = await startTestApp({ model: 'fake', fakeDimension: 4, clock: clock.now })));
  after(() => t.close());

  const ok = async (url: string, body: object) => {
    const res = await t.call('POST', url, body);
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };
  const expiresAt = async (table: string, key: string): Promise<number | null> => {
    const at = (await ok('/v1/vector/get', { keyspace: KS, table, key, include_vector: false })).expires_at as string | null;
    return at === null ? null : Date.parse(at);
  };
  /**
   * `want` counts from a time taken before the write; the server counts from when it took the
   * write, later by as long as the test has run since (`from`) on a real clock; then to the second.
   */
  const near = (got: number | null, want: number, from: number) =>
    assert.ok(got !== null && got >= want - 1_000 && got <= want + (clock.now() - from) + 1_000, `expires_at ${got} is ${want} (+ up to ${clock.now() - from} ms), to the second`);

  it('resolves each row TTL: the record, else the request, else the table default; null means never', async () => {
    const made = await ok('/v1/keyspaces/table/create', { keyspace: KS, table: 'ttl', dimension: 4, default_ttl_seconds: 3600 });
    assert.equal(made.default_ttl_seconds, 3600);
    const now = clock.now();
    await ok('/v1/vector/write', { keyspace: KS, table: 'ttl', key: 'by_default', vector: [1, 0, 0, 0] });
    await ok('/v1/vector/write', { keyspace: KS, table: 'ttl', key: 'never', vector: [1, 0, 0, 0], ttl_seconds: null });
    await ok('/v1/vector/batch', {
      keyspace: KS,
      table: 'ttl',
      ttl_seconds: 600,
      vectors: [
        { key: 'by_request', vector: [0, 1, 0, 0] },
        { key: 'own', vector: [0, 0, 1, 0], ttl_seconds: 60 },
      ],
    });
    near(await expiresAt('ttl', 'by_default'), now + 3_600_000, now);
    assert.equal(await expiresAt('ttl', 'never'), null);
    near(await expiresAt('ttl', 'by_request'), now + 600_000, now);
    near(await expiresAt('ttl', 'own'), now + 60_000, now);
    const listed = await ok('/v1/vector/list', { keyspace: KS, table: 'ttl', include_vector: false });
    assert.equal(listed.vectors.find((v: { key: string }) => v.key === 'never').expires_at, null);
    near(Date.parse(listed.vectors.find((v: { key: string }) => v.key === 'own').expires_at), now + 60_000, now);

    // Changed later: new writes follow it, rows already written keep theirs.
    assert.deepEqual(await ok('/v1/keyspaces/table/update', { keyspace: KS, table: 'ttl', default_ttl_seconds: null }), { keyspace: KS, table: 'ttl', default_ttl_seconds: null });
    await ok('/v1/vector/write', { keyspace: KS, table: 'ttl', key: 'after_update', vector: [1, 1, 0, 0] });
    assert.equal(await expiresAt('ttl', 'after_update'), null);
    near(await expiresAt('ttl', 'by_default'), now + 3_600_000, now);
    // A rewrite sets the TTL its write says.
    await ok('/v1/vector/write', { keyspace: KS, table: 'ttl', key: 'by_default', vector: [1, 0, 0, 0] });
    assert.equal(await expiresAt('ttl', 'by_default'), null);
  });

  it('names every bad TTL field', async () => {
    const bad = async (url: string, body: object, path: string) => {
      const res = await t.call('POST', url, body);
      assert.equal(res.statusCode, 400, res.body);
      assert.ok((res.json().errors as { path: string }[]).some((e) => e.path === path), `${path} in ${res.body}`);
    };
    await bad('/v1/vector/write', { keyspace: KS, table: 'ttl', vector: [1, 0, 0, 0], ttl_seconds: 0 }, '/body/ttl_seconds');
    await bad('/v1/vector/batch', { keyspace: KS, table: 'ttl', vectors: [{ vector: [1, 0, 0, 0] }, { vector: [1, 0, 0, 0], ttl_seconds: 1.5 }] }, '/body/vectors/1/ttl_seconds');
    await bad('/v1/vector/batch', { keyspace: KS, table: 'ttl', ttl_seconds: 400_000_000, vectors: [{ vector: [1, 0, 0, 0] }] }, '/body/ttl_seconds');
    await bad('/v1/keyspaces/table/create', { keyspace: KS, table: 'ttl_bad', dimension: 4, default_ttl_seconds: -1 }, '/body/default_ttl_seconds');
    await bad('/v1/keyspaces/table/update', { keyspace: KS, table: 'ttl', default_ttl_seconds: 'soon' }, '/body/default_ttl_seconds');
    await bad('/v1/metadata/write', { keyspace: KS, table: 'ttl', source_file: 'a', ttl_seconds: 0 }, '/body/ttl_seconds');
    const missing = await t.call('POST', '/v1/keyspaces/table/update', { keyspace: KS, table: 'nope', default_ttl_seconds: 60 });
    assert.equal(missing.statusCode, 404, missing.body);
  });

  it('an expired row is gone from get, list, count and every search mode', async () => {
    await ok('/v1/keyspaces/table/create', { keyspace: KS, table: 'gone', dimension: 4 });
    await ok('/v1/vector/batch', {
      keyspace: KS,
      table: 'gone',
      vectors: [
        { key: 'stays', text: 'harbour crane report', ttl_seconds: 3600 },
        { key: 'goes', text: 'harbour crane report twice', ttl_seconds: 6 },
      ],
    });
    const search = async (mode: string) => ((await ok('/v1/search/', { keyspace: KS, table: 'gone', query: 'harbour crane', mode, final_top_k: 5 })).matches as { key: string }[]).map((m) => m.key).sort();
    for (const mode of ['semantic', 'lexical', 'hybrid']) assert.deepEqual(await search(mode), ['goes', 'stays'], mode);
    const wrote = clock.now();
    const meta = await ok('/v1/metadata/write', { keyspace: KS, table: 'gone', source_file: 'f.txt', ttl_seconds: 6 });
    near(Date.parse(meta.expires_at), wrote + 6_000, wrote);

    await clock.advance(7_500);
    assert.equal((await t.call('POST', '/v1/vector/get', { keyspace: KS, table: 'gone', key: 'goes' })).statusCode, 404);
    assert.equal((await ok('/v1/vector/count', { keyspace: KS, table: 'gone' })).count, 1);
    assert.deepEqual((await ok('/v1/vector/list', { keyspace: KS, table: 'gone' })).vectors.map((v: { key: string }) => v.key), ['stays']);
    for (const mode of ['semantic', 'lexical', 'hybrid']) assert.deepEqual(await search(mode), ['stays'], mode);
  });
});
