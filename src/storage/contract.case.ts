/**
 * The storage contract: every backend must pass these cases. A backend's test file calls
 * `storageContract(name, open, clock)`, where `open` gives a fresh, empty store and its cleanup,
 * and `clock` is the one its rows expire by (default the real one: see contract-ttl.case.ts).
 * Errors are checked by `code`, never by message text.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Metric, Storage, VectorRow } from './api.ts';
import { bruteScore } from './brute-score.case.ts';
import { randomDifferentialCase } from './contract-random.case.ts';
import { lexicalContract } from './contract-lexical.case.ts';
import { matchesContract } from './contract-matches.case.ts';
import { realClock, ttlContract, type TestClock } from './contract-ttl.case.ts';
import { scaleContract } from './contract-scale.case.ts';

export type OpenStorage = () => Promise<{ storage: Storage; cleanup: () => Promise<void> }>;

/** Asserts that `p` rejects with a ServiceError-like error carrying one of `codes`. */
export async function rejectsWithCode(p: Promise<unknown>, ...codes: string[]): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    const code = (e as { code?: unknown }).code;
    assert.ok(codes.includes(code as string), `expected code ${codes.join(' or ')}, got ${String(code)} (${(e as Error).message})`);
    return true;
  });
}

function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 16807) % 2147483647) / 2147483647;
}

const randomVector = (r: () => number, d: number): Float32Array => Float32Array.from({ length: d }, () => r() * 2 - 1);

function bruteForce(rows: VectorRow[], q: Float32Array, metric: Metric, limit: number): { key: string; score: number }[] {
  const scored = rows.map((r) => ({ key: r.key, score: bruteScore(metric, q, r.vector) }));
  scored.sort((x, y) => (metric === 'euclidean' ? x.score - y.score : y.score - x.score));
  return scored.slice(0, limit);
}

const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export function storageContract(name: string, open: OpenStorage, clock: TestClock = realClock): void {
  describe(`storage contract: ${name}`, () => {
    let storage: Storage;
    let cleanup: () => Promise<void>;
    before(async () => {
      ({ storage, cleanup } = await open());
    });
    after(async () => {
      await cleanup();
    });

    describe('catalog', () => {
      it('creates, gets and lists keyspaces; a taken name is already_exists', async () => {
        const ks = await storage.createKeyspace({ name: 'cat_a', owner: 'user-1' });
        assert.equal(ks.name, 'cat_a');
        assert.equal(ks.owner, 'user-1');
        assert.equal(typeof ks.replication, 'string');
        assert.match(ks.createdAt, ISO_Z);
        await storage.createKeyspace({ name: 'cat_b', owner: null });
        assert.deepEqual(await storage.getKeyspace('cat_a'), ks);
        assert.equal(await storage.getKeyspace('cat_missing'), null);
        const all = (await storage.listKeyspaces()).map((k) => k.name);
        assert.ok(all.includes('cat_a') && all.includes('cat_b'));
        assert.deepEqual((await storage.listKeyspaces('user-1')).map((k) => k.name), ['cat_a']);
        await rejectsWithCode(storage.createKeyspace({ name: 'cat_a', owner: null }), 'already_exists');
      });

      it('creates tables; ifNotExists returns the existing one; errors for taken names and missing keyspaces', async () => {
        await storage.createKeyspace({ name: 'cat_t', owner: null });
        const t = await storage.createTable({ keyspace: 'cat_t', name: 'docs', dimension: 8, metric: 'cosine', model: 'm1' });
        assert.deepEqual({ ...t, createdAt: '' }, { keyspace: 'cat_t', name: 'docs', dimension: 8, metric: 'cosine', model: 'm1', lexical: { tokenizer: 'porter' }, createdAt: '' });
        assert.match(t.createdAt, ISO_Z);
        assert.deepEqual(await storage.getTable('cat_t', 'docs'), t);
        assert.equal(await storage.getTable('cat_t', 'nope'), null);
        const again = await storage.createTable({ keyspace: 'cat_t', name: 'docs', dimension: 16, metric: 'euclidean', model: null }, { ifNotExists: true });
        assert.deepEqual(again, t);
        await rejectsWithCode(storage.createTable({ keyspace: 'cat_t', name: 'docs', dimension: 8, metric: 'cosine', model: null }), 'already_exists');
        await rejectsWithCode(storage.createTable({ keyspace: 'cat_none', name: 'docs', dimension: 8, metric: 'cosine', model: null }), 'keyspace_not_found');
        await storage.createTable({ keyspace: 'cat_t', name: 'other', dimension: 3, metric: 'dot_product', model: null });
        await storage.upsertVectors('cat_t', 'other', [{ key: 'a', vector: Float32Array.of(1, 2, 3), metadata: {}, text: null }]);
        const listed = await storage.listTables('cat_t');
        assert.deepEqual(listed.map((x) => [x.name, x.dimension, x.metric, x.rowCount]), [
          ['docs', 8, 'cosine', 0],
          ['other', 3, 'dot_product', 1],
        ]);
        await rejectsWithCode(storage.listTables('cat_none'), 'keyspace_not_found');
      });
    });

    describe('vectors', () => {
      const D = 4;
      const v = (...xs: number[]): Float32Array => Float32Array.from(xs);
      before(async () => {
        await storage.createKeyspace({ name: 'vec', owner: null });
        await storage.createTable({ keyspace: 'vec', name: 't', dimension: D, metric: 'cosine', model: null });
      });

      it('upserts and gets rows; writing a key again overwrites it without a duplicate', async () => {
        await storage.upsertVectors('vec', 't', [
          { key: 'a', vector: v(1, 0, 0, 0), metadata: { n: 1, tag: 'x' }, text: 'alpha' },
          { key: 'b', vector: v(0, 1, 0, 0), metadata: {}, text: null },
        ]);
        const a = await storage.getVector('vec', 't', 'a');
        assert.ok(a);
        assert.deepEqual([...a.vector], [1, 0, 0, 0]);
        assert.ok(a.vector instanceof Float32Array);
        assert.deepEqual(a.metadata, { n: 1, tag: 'x' });
        assert.equal(a.text, 'alpha');
        assert.equal(await storage.getVector('vec', 't', 'zz'), null);
        assert.equal(await storage.countVectors('vec', 't'), 2);

        await storage.upsertVectors('vec', 't', [{ key: 'a', vector: v(0, 0, 1, 0), metadata: { n: 2 }, text: null }]);
        assert.equal(await storage.countVectors('vec', 't'), 2);
        const a2 = await storage.getVector('vec', 't', 'a');
        assert.deepEqual([...a2!.vector], [0, 0, 1, 0]);
        assert.deepEqual(a2!.metadata, { n: 2 });
        assert.equal(a2!.text, null);
        const hits = await storage.search('vec', 't', { vector: v(0, 0, 1, 0), metric: 'cosine', candidates: 100, limit: 10 });
        assert.deepEqual(hits.map((h) => h.key), ['a', 'b']);
        assert.ok(Math.abs(hits[0].score - 1) < 1e-6);
      });

      it('keeps every row of a batch that names a new key twice with its own vector', async () => {
        await storage.createTable({ keyspace: 'vec', name: 'twice', dimension: D, metric: 'cosine', model: null });
        await storage.upsertVectors('vec', 'twice', [
          { key: 'a', vector: v(1, 0, 0, 0), metadata: {}, text: null },
          { key: 'b', vector: v(0, 1, 0, 0), metadata: {}, text: null },
          { key: 'a', vector: v(0, 0, 1, 0), metadata: { last: true }, text: null },
          { key: 'c', vector: v(0, 0, 0, 1), metadata: {}, text: null },
        ]);
        assert.equal(await storage.countVectors('vec', 'twice'), 3);
        for (const [key, vector] of [['a', v(0, 0, 1, 0)], ['b', v(0, 1, 0, 0)], ['c', v(0, 0, 0, 1)]] as const) {
          const hits = await storage.search('vec', 'twice', { vector, metric: 'cosine', candidates: 100, limit: 1, includeVector: true });
          assert.equal(hits[0].key, key);
          assert.ok(Math.abs(hits[0].score - 1) < 1e-6, `${key} scores ${hits[0].score}`);
          assert.deepEqual([...hits[0].vector!], [...vector]);
        }
      });

      it('answers wrong dimensions alike: dimension_mismatch with {expected, actual}, every bad row named', async () => {
        const rows = [v(1, 1, 1, 1), Float32Array.of(1, 2, 3), v(1, 0, 0, 0), Float32Array.of(1, 2, 3, 4, 5)].map((vector, i) => ({ key: `d${i}`, vector, metadata: {}, text: null }));
        await assert.rejects(storage.upsertVectors('vec', 't', rows), (e: unknown) => {
          const { code, extra, errors } = e as { code: string; extra?: unknown; errors?: unknown };
          assert.deepEqual({ code, extra, errors }, {
            code: 'dimension_mismatch',
            extra: { expected: 4, actual: 3 },
            errors: [
              { path: '/1/vector', message: 'has 3 dimensions; the table holds 4' },
              { path: '/3/vector', message: 'has 5 dimensions; the table holds 4' },
            ],
          });
          return true;
        });
        await assert.rejects(storage.search('vec', 't', { vector: Float32Array.of(1, 2), metric: 'cosine', candidates: 5, limit: 5 }), (e: unknown) => {
          const { code, extra, errors } = e as { code: string; extra?: unknown; errors?: unknown };
          assert.deepEqual({ code, extra, errors }, { code: 'dimension_mismatch', extra: { expected: 4, actual: 2 }, errors: [{ path: '/vector', message: 'has 2 dimensions; the table holds 4' }] });
          return true;
        });
      });

      it('writes nothing from a batch with a wrong dimension', async () => {
        const before = await storage.countVectors('vec', 't');
        await rejectsWithCode(
          storage.upsertVectors('vec', 't', [
            { key: 'ok1', vector: v(1, 1, 1, 1), metadata: {}, text: null },
            { key: 'bad', vector: Float32Array.of(1, 2, 3), metadata: {}, text: null },
            { key: 'ok2', vector: v(1, 1, 1, 1), metadata: {}, text: null },
          ]),
          'dimension_mismatch',
        );
        assert.equal(await storage.countVectors('vec', 't'), before);
        assert.equal(await storage.getVector('vec', 't', 'ok1'), null);
        await rejectsWithCode(storage.search('vec', 't', { vector: Float32Array.of(1, 2), metric: 'cosine', candidates: 5, limit: 5 }), 'dimension_mismatch');
      });

      it('reports missing tables and keyspaces', async () => {
        const row = [{ key: 'k', vector: v(1, 0, 0, 0), metadata: {}, text: null }];
        await rejectsWithCode(storage.upsertVectors('vec', 'missing', row), 'table_not_found');
        await rejectsWithCode(storage.search('vec', 'missing', { vector: v(1, 0, 0, 0), metric: 'cosine', candidates: 5, limit: 5 }), 'table_not_found');
        await rejectsWithCode(storage.getVector('vec', 'missing', 'k'), 'table_not_found');
        await rejectsWithCode(storage.countVectors('vec', 'missing'), 'table_not_found');
        await rejectsWithCode(storage.search('no_such_ks', 't', { vector: v(1, 0, 0, 0), metric: 'cosine', candidates: 5, limit: 5 }), 'keyspace_not_found', 'table_not_found');
      });

      it('deletes by keys, by filter, and counts with a filter', async () => {
        await storage.createTable({ keyspace: 'vec', name: 'del', dimension: D, metric: 'euclidean', model: null });
        const rows: VectorRow[] = Array.from({ length: 20 }, (_, i) => ({
          key: `k${i}`,
          vector: v(i, 0, 0, 1),
          metadata: { group: i % 2 === 0 ? 'even' : 'odd', i },
          text: null,
        }));
        await storage.upsertVectors('vec', 'del', rows);
        assert.equal(await storage.countVectors('vec', 'del', { group: 'even' }), 10);
        assert.equal(await storage.countVectors('vec', 'del', { i: { $gte: 15 } }), 5);
        assert.equal(await storage.deleteVectors('vec', 'del', ['k0', 'k1', 'nope', 'k0']), 2);
        assert.equal(await storage.getVector('vec', 'del', 'k0'), null);
        assert.equal(await storage.countVectors('vec', 'del'), 18);
        assert.equal(await storage.deleteByFilter('vec', 'del', { group: 'odd', i: { $lt: 10 } }), 4);
        assert.equal(await storage.countVectors('vec', 'del'), 14);
        assert.equal(await storage.countVectors('vec', 'del', { group: 'odd' }), 5);
        const hits = await storage.search('vec', 'del', { vector: v(0, 0, 0, 1), metric: 'euclidean', candidates: 100, limit: 3 });
        assert.deepEqual(hits.map((h) => h.key), ['k2', 'k4', 'k6']);
        await rejectsWithCode(storage.countVectors('vec', 'del', { i: { $gtx: 1 } }), 'validation_failed');
        await rejectsWithCode(storage.deleteByFilter('vec', 'del', { $nor: [] }), 'validation_failed');
      });

      for (const metric of ['cosine', 'dot_product', 'euclidean'] as const) {
        it(`search is exact when candidates >= rows (${metric})`, async () => {
          const r = rng(metric.length * 7 + 1);
          const d = 16 + Math.floor(r() * 48);
          const table = `exact_${metric}`;
          await storage.createTable({ keyspace: 'vec', name: table, dimension: d, metric, model: null });
          const rows: VectorRow[] = Array.from({ length: 400 }, (_, i) => ({ key: `r${i}`, vector: randomVector(r, d), metadata: { i, even: i % 2 === 0 }, text: `t${i}` }));
          await storage.upsertVectors('vec', table, rows.slice(0, 250));
          await storage.upsertVectors('vec', table, rows.slice(250));
          for (let qn = 0; qn < 10; qn++) {
            const q = randomVector(r, d);
            const want = bruteForce(rows, q, metric, 10);
            const got = await storage.search('vec', table, { vector: q, metric, candidates: 400, limit: 10 });
            assert.deepEqual(got.map((g) => g.key), want.map((w) => w.key));
            got.forEach((g, i) => assert.ok(Math.abs(g.score - want[i].score) <= 1e-5, `${g.score} vs ${want[i].score}`));
            const first = rows[Number(got[0].key.slice(1))];
            assert.deepEqual(got[0].metadata, first.metadata);
            assert.equal(got[0].text, first.text);
            assert.equal(got[0].vector, undefined);

            const filtered = await storage.search('vec', table, { vector: q, metric, candidates: 1000, limit: 5, filter: { even: true } });
            const wantF = bruteForce(rows.filter((x) => x.metadata.even === true), q, metric, 5);
            assert.deepEqual(filtered.map((g) => g.key), wantF.map((w) => w.key));
            filtered.forEach((g, i) => assert.ok(Math.abs(g.score - wantF[i].score) <= 1e-5));
          }
          const withVec = await storage.search('vec', table, { vector: rows[7].vector, metric, candidates: 400, limit: 400, includeVector: true });
          assert.equal(withVec.length, 400);
          const seven = withVec.find((m) => m.key === 'r7');
          assert.ok(seven?.vector instanceof Float32Array);
          assert.deepEqual([...seven.vector], [...rows[7].vector]);
        });
      }

      it('returns at most limit and never more than the table holds', async () => {
        const got = await storage.search('vec', 't', { vector: v(1, 1, 0, 0), metric: 'cosine', candidates: 1_000_000, limit: 50 });
        assert.equal(got.length, await storage.countVectors('vec', 't'));
        const one = await storage.search('vec', 't', { vector: v(1, 1, 0, 0), metric: 'cosine', candidates: 1_000_000, limit: 1 });
        assert.equal(one.length, 1);
        await rejectsWithCode(storage.search('vec', 't', { vector: v(1, 1, 0, 0), metric: 'cosine', candidates: 10, limit: 10, filter: { a: { $bad: 1 } } }), 'validation_failed');
      });
    });

    describe('metadata records', () => {
      it('upserts, replaces and gets records by source file', async () => {
        const rec = (file: string, raw: string) => ({ keyspace: 'm', table: 't', source_file: file, raw_value: raw, source_type: 'txt', processing_details: 'chunks=1' });
        await storage.upsertMetadata([rec('a.txt', 'one'), rec('b.txt', 'two')]);
        await storage.upsertMetadata([rec('a.txt', 'uno')]);
        const got = await storage.getMetadata('m', 't', ['a.txt', 'b.txt', 'c.txt']);
        assert.deepEqual([...got.keys()].sort(), ['a.txt', 'b.txt']);
        assert.deepEqual(got.get('a.txt'), rec('a.txt', 'uno'));
        assert.equal((await storage.getMetadata('m', 'other', ['a.txt'])).size, 0);
        assert.equal((await storage.getMetadata('m', 't', [])).size, 0);
      });

      it('pages through one table\'s records by source file, each once', async () => {
        const rec = (file: string) => ({ keyspace: 'm2', table: 't', source_file: file, raw_value: `raw ${file}`, source_type: 'md', processing_details: '' });
        const files = Array.from({ length: 7 }, (_, i) => `doc-${i}.md`);
        await storage.upsertMetadata([...files.map(rec), { ...rec('elsewhere.md'), table: 'other' }]);
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page: { records: { source_file: string }[]; cursor: string | null } = await storage.scanMetadata('m2', 't', { cursor, limit: 3 });
          assert.ok(page.records.length <= 3);
          seen.push(...page.records.map((r) => r.source_file));
          cursor = page.cursor;
          pages++;
        } while (cursor !== null && pages < 10);
        assert.deepEqual(seen, files);
        assert.deepEqual((await storage.scanMetadata('m2', 't', { limit: 100 })).records[2], rec('doc-2.md'));
        assert.deepEqual(await storage.scanMetadata('m2', 'none', { limit: 10 }), { records: [], cursor: null });
      });
    });

    describe('accounts', () => {
      it('creates users; a taken e-mail is already_exists', async () => {
        const u = await storage.createUser({ name: 'Ada', email: 'ada@example.com' });
        assert.equal(typeof u.id, 'string');
        assert.ok(u.id.length > 0);
        assert.equal(u.name, 'Ada');
        assert.equal(typeof u.plan, 'string');
        assert.deepEqual(u.connections, []);
        assert.match(u.createdAt, ISO_Z);
        assert.deepEqual(await storage.getUser(u.id), u);
        assert.deepEqual(await storage.getUserByEmail('ada@example.com'), u);
        assert.equal(await storage.getUser('nobody'), null);
        assert.equal(await storage.getUserByEmail('nobody@example.com'), null);
        await rejectsWithCode(storage.createUser({ name: 'Other', email: 'ada@example.com' }), 'already_exists');
        const pro = await storage.createUser({ name: 'Bob', email: 'bob@example.com', plan: 'pro' });
        assert.equal(pro.plan, 'pro');
        const ids = (await storage.listUsers()).map((x) => x.id);
        assert.ok(ids.includes(u.id) && ids.includes(pro.id));
      });

      it('creates API keys, finds them by hash, lists and counts them', async () => {
        const u = await storage.createUser({ name: 'Key Owner', email: 'keys@example.com' });
        const before = await storage.countApiKeys();
        const k = await storage.createApiKey({ userId: u.id, name: 'ci', hash: 'a'.repeat(64), permissions: 'Write', resources: ['ks1', 'ks2'] });
        assert.equal(k.userId, u.id);
        assert.equal(k.revokedAt, null);
        assert.match(k.createdAt, ISO_Z);
        assert.deepEqual(k.resources, ['ks1', 'ks2']);
        const fixed = await storage.createApiKey({ id: 'fixed-id', userId: u.id, name: 'admin', hash: 'b'.repeat(64), permissions: 'All', resources: ['*'] });
        assert.equal(fixed.id, 'fixed-id');
        assert.deepEqual(await storage.findApiKeyByHash('a'.repeat(64)), k);
        assert.equal(await storage.findApiKeyByHash('c'.repeat(64)), null);
        assert.deepEqual((await storage.listApiKeys(u.id)).map((x) => x.id).sort(), [k.id, 'fixed-id'].sort());
        assert.ok((await storage.listApiKeys()).length >= 2);
        assert.equal(await storage.countApiKeys(), before + 2);
      });

      it('gets and revokes keys (revoking twice keeps the first time)', async () => {
        const u = await storage.createUser({ name: 'Revoker', email: 'revoke@example.com' });
        const k = await storage.createApiKey({ userId: u.id, name: 'r', hash: 'd'.repeat(64), permissions: 'Read', resources: ['*'] });
        assert.deepEqual(await storage.getApiKey(k.id), k);
        assert.equal(await storage.getApiKey('no-such-key'), null);
        const revoked = await storage.revokeApiKey(k.id);
        assert.match(revoked!.revokedAt!, ISO_Z);
        assert.equal((await storage.findApiKeyByHash('d'.repeat(64)))!.revokedAt, revoked!.revokedAt);
        assert.equal((await storage.revokeApiKey(k.id))!.revokedAt, revoked!.revokedAt);
        assert.equal(await storage.revokeApiKey('no-such-key'), null);
      });

      it('adds connections idempotently and sets plans', async () => {
        const u = await storage.createUser({ name: 'Conn', email: 'conn@example.com' });
        assert.equal(u.plan, 'free');
        await storage.addConnection(u.id, { type: 'github', id: 'x' });
        await storage.addConnection(u.id, { type: 'github', id: 'x' });
        const after = await storage.addConnection(u.id, { type: 'slack', id: 'y' });
        assert.deepEqual(after.connections, [{ type: 'github', id: 'x' }, { type: 'slack', id: 'y' }]);
        assert.deepEqual((await storage.getUser(u.id))!.connections, after.connections);
        await rejectsWithCode(storage.addConnection('no-such-user', { type: 'a', id: 'b' }), 'user_not_found');
        await storage.setUserPlan(u.id, 'pro');
        assert.equal((await storage.getUser(u.id))!.plan, 'pro');
        await rejectsWithCode(storage.setUserPlan('no-such-user', 'pro'), 'user_not_found');
      });

      it('applies a webhook event once, with its plan change', async () => {
        const u = await storage.createUser({ name: 'Payer', email: 'payer-contract@example.com' });
        assert.equal(await storage.applyWebhookEvent('evt_c1', 'checkout.session.completed', { userId: u.id, plan: 'pro' }), 'applied');
        assert.equal((await storage.getUser(u.id))!.plan, 'pro');
        await storage.setUserPlan(u.id, 'free');
        assert.equal(await storage.applyWebhookEvent('evt_c1', 'checkout.session.completed', { userId: u.id, plan: 'pro' }), 'duplicate');
        assert.equal((await storage.getUser(u.id))!.plan, 'free');
        assert.equal(await storage.applyWebhookEvent('evt_c2', 'invoice.paid', null), 'applied');
        assert.equal(await storage.applyWebhookEvent('evt_c2', 'invoice.paid', null), 'duplicate');
      });

      it("counts a user's usage over the keyspaces they own", async () => {
        const u = await storage.createUser({ name: 'Owner', email: 'usage@example.com' });
        assert.deepEqual(await storage.usageOf(u.id), { vectors: 0, fileBytes: 0 });
        await storage.createKeyspace({ name: 'usage_ks', owner: u.id });
        await storage.createTable({ keyspace: 'usage_ks', name: 'a', dimension: 2, metric: 'cosine', model: null });
        await storage.createTable({ keyspace: 'usage_ks', name: 'b', dimension: 2, metric: 'cosine', model: null });
        const row = (key: string): VectorRow => ({ key, vector: Float32Array.from([1, 2]), metadata: {}, text: null });
        await storage.upsertVectors('usage_ks', 'a', [row('1'), row('2')]);
        await storage.upsertVectors('usage_ks', 'b', [row('3')]);
        assert.equal((await storage.usageOf(u.id)).vectors, 3);
      });
    });

    describe('scan', () => {
      it('pages through every row once, in a stable order', async () => {
        await storage.createKeyspace({ name: 'scan_ks', owner: null });
        await storage.createTable({ keyspace: 'scan_ks', name: 't', dimension: 3, metric: 'euclidean', model: null });
        const rows: VectorRow[] = Array.from({ length: 57 }, (_, i) => ({ key: `key-${i}`, vector: Float32Array.from([i, 1, 2]), metadata: { i }, text: i % 2 ? `t${i}` : null }));
        await storage.upsertVectors('scan_ks', 't', rows);
        const seen: VectorRow[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page = await storage.scanVectors('scan_ks', 't', { cursor, limit: 10 });
          assert.ok(page.rows.length <= 10);
          seen.push(...page.rows);
          cursor = page.cursor;
          pages++;
        } while (cursor !== null && pages < 100);
        assert.equal(seen.length, 57);
        assert.equal(new Set(seen.map((r) => r.key)).size, 57);
        const byKey = new Map(rows.map((r) => [r.key, r]));
        for (const r of seen) {
          assert.deepEqual(Array.from(r.vector), Array.from(byKey.get(r.key)!.vector));
          assert.deepEqual(r.metadata, byKey.get(r.key)!.metadata);
          assert.equal(r.text, byKey.get(r.key)!.text);
        }
        await rejectsWithCode(storage.scanVectors('scan_ks', 'missing', { limit: 10 }), 'table_not_found');
      });
    });

    lexicalContract(() => storage);
    matchesContract(() => storage, clock);
    ttlContract(() => storage, clock);
    scaleContract(() => storage);

    describe('random differential', () => {
      it('agrees with an in-memory model over a seeded random sequence of writes, deletes and checks', async (t) => {
        await randomDifferentialCase(storage, (msg) => t.diagnostic(msg));
      });
    });

    it('answers ping', async () => {
      assert.equal(await storage.ping(), true);
    });
  });
}
