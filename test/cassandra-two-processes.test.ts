/**
 * Two real service processes (src/main.ts) on one Cassandra: they share every piece of state, so
 * a write through one is found (searched, filtered, counted) through the other at once, a key made through one works on the other, and
 * a key revoked through one is refused by the other on its very next request.
 *
 * Runs only with VSS_TEST_CASSANDRA=1 against a running Cassandra 5 (`npm run test:cassandra`
 * starts one); VSS_TEST_CASSANDRA_CONTACT_POINTS (default 127.0.0.1). Both processes use one fresh
 * system keyspace and keyspace prefix, dropped at the end.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dropPrefixed, freshNames } from '../src/storage/cassandra/test-support.ts';
import { startServer, type RunningServer } from './server.ts';

const ENABLED = process.env.VSS_TEST_CASSANDRA === '1';
const CONTACT_POINTS = process.env.VSS_TEST_CASSANDRA_CONTACT_POINTS ?? '127.0.0.1';
const ADMIN = 'two-processes-admin-key-0123456789';
const KS = 'default_keyspace';

if (!ENABLED) {
  describe('two service processes on one Cassandra', () => {
    it('is skipped: run `npm run test:cassandra` (or set VSS_TEST_CASSANDRA=1 with a Cassandra 5 running)', { skip: 'VSS_TEST_CASSANDRA is not 1' }, () => {});
  });
} else {
  describe('two service processes on one Cassandra', () => {
    const names = freshNames();
    const dirs: string[] = [];
    let a: RunningServer;
    let b: RunningServer;

    before(async () => {
      const env = async (): Promise<Record<string, string>> => {
        const dir = await mkdtemp(path.join(os.tmpdir(), 'vss-two-'));
        dirs.push(dir);
        return {
          VSS_DATA_DIR: dir,
          VSS_ADMIN_KEY: ADMIN,
          VSS_STORAGE: 'cassandra',
          VSS_CASSANDRA_CONTACT_POINTS: CONTACT_POINTS,
          VSS_CASSANDRA_LOCAL_DC: 'datacenter1',
          VSS_CASSANDRA_REPLICATION: "{'class': 'SimpleStrategy', 'replication_factor': 1}",
          VSS_CASSANDRA_SYSTEM_KEYSPACE: names.systemKeyspace,
          VSS_CASSANDRA_KEYSPACE_PREFIX: names.keyspacePrefix,
        };
      };
      const [envA, envB] = [await env(), await env()];
      // Started together on an empty system keyspace: both bootstrap the same administrator,
      // admin key and default keyspace at once, and both must come up.
      const [ra, rb] = await Promise.allSettled([startServer(envA, 120_000), startServer(envB, 120_000)]);
      if (ra.status === 'fulfilled') a = ra.value;
      if (rb.status === 'fulfilled') b = rb.value;
      for (const r of [ra, rb]) if (r.status === 'rejected') throw r.reason;
    });

    after(async () => {
      await Promise.all([a, b].filter(Boolean).map((s) => s.kill('SIGTERM')));
      await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
      await dropPrefixed(CONTACT_POINTS.split(',').map((s) => s.trim()), 'datacenter1', names.keyspacePrefix);
    });

    it('finds through B what was written through A (vectors and text)', async () => {
      const vectors = Array.from({ length: 20 }, (_, i) => ({ key: `v${i}`, vector: [1, i / 10, (i % 3) - 1], metadata: { i } }));
      let res = await a.call('POST', '/v1/vector/batch', { keyspace: KS, table: 'shared', vectors });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      res = await b.call('POST', '/v1/search/', { keyspace: KS, table: 'shared', vector: [1, 0.7, 0], final_top_k: 3 });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.matches[0].key, 'v7');
      assert.equal((await b.call('POST', '/v1/vector/count', { keyspace: KS, table: 'shared' })).body.count, 20);
      // A filtered search through B sees A's rows at once (the filter runs in Cassandra's index).
      res = await b.call('POST', '/v1/search/', { keyspace: KS, table: 'shared', vector: [1, 0, 0], final_top_k: 3, filter: { i: { $in: [4, 13] } } });
      assert.deepEqual(res.body.matches.map((m: { key: string }) => m.key).sort(), ['v13', 'v4']);

      // Text embedded by A's model, found by meaning through B's.
      res = await a.call('POST', '/v1/vector/batch', {
        keyspace: KS,
        table: 'vector',
        vectors: [
          { key: 'cat', text: 'A cat is lying on a sofa.' },
          { key: 'stocks', text: 'The stock market fell sharply after the interest rate decision.' },
          { key: 'bread', text: 'Knead the dough and let the bread rise for an hour before baking.' },
        ],
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      res = await b.call('POST', '/v1/search/', { keyspace: KS, table: 'vector', query: 'a kitten sleeping on the couch' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.matches[0].key, 'cat');

      // A delete through B is gone for A.
      res = await b.call('POST', '/v1/vector/delete', { keyspace: KS, table: 'shared', keys: ['v7'] });
      assert.equal(res.body.deleted, 1);
      assert.equal((await a.call('POST', '/v1/vector/get', { keyspace: KS, table: 'shared', key: 'v7' })).status, 404);
      // ...and uncounted, and out of its filtered searches.
      assert.equal((await a.call('POST', '/v1/vector/count', { keyspace: KS, table: 'shared' })).body.count, 19);
      res = await a.call('POST', '/v1/search/', { keyspace: KS, table: 'shared', vector: [1, 0.7, 0], final_top_k: 3, filter: { i: { $in: [7, 8] } } });
      assert.deepEqual(res.body.matches.map((m: { key: string }) => m.key), ['v8']);
    });

    it('accepts on B a key made through A, and refuses it on A at once and on B within VSS_CASSANDRA_API_KEY_CACHE_MS (1 s) when A revokes it', async () => {
      const user = await a.call('POST', '/v1/user/', { name: 'Shared', email: 'shared@example.com' });
      assert.equal(user.status, 200, JSON.stringify(user.body));
      const made = await a.call('POST', '/v1/keys/generate', { name: 'k', user_id: user.body.account_id, permissions: 'Write' });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const { key, key_id } = made.body as { key: string; key_id: string };

      const me = await b.call('GET', '/v1/user/', undefined, key);
      assert.equal(me.status, 200, JSON.stringify(me.body));
      assert.equal(me.body.email, 'shared@example.com');
      const created = await b.call('POST', '/v1/keyspaces/create', { keyspace: 'shared_user' }, key);
      assert.equal(created.status, 200, JSON.stringify(created.body));
      assert.equal((await a.call('POST', '/v1/vector/write', { keyspace: 'shared_user', table: 't', key: 'x', vector: [1, 2] }, key)).status, 200);

      const revoked = await a.call('POST', '/v1/keys/revoke', { key_id });
      assert.equal(revoked.status, 200, JSON.stringify(revoked.body));
      assert.equal((await a.call('GET', '/v1/user/', undefined, key)).status, 401, 'the revoking process refuses it at once');
      // B remembers the key it found for up to a second (storage/cassandra/memos.ts).
      await new Promise((r) => setTimeout(r, 1100));
      const refused = await b.call('GET', '/v1/user/', undefined, key);
      assert.equal(refused.status, 401, JSON.stringify(refused.body));
      assert.equal(refused.body.code, 'unauthenticated');
      // The administrator key (bootstrapped by both at once) still works on both.
      assert.equal((await a.call('GET', '/v1/user/')).status, 200);
      assert.equal((await b.call('GET', '/v1/user/')).status, 200);
    });
  });
}
