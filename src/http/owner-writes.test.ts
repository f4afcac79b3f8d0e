/**
 * One owner's vector writes take turns in a process only where a quota check needs it
 * (service/owner-lock.ts): writes of an owner whose plan does not limit vectors run at once, a
 * limited plan's one after the other (fake model: no meaning checked).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_KEY, startTestApp, type TestApp } from './testing.ts';

describe('concurrent writes of one owner', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ model: 'fake', fakeDimension: 4 });
  });
  after(async () => t.close());

  /** Sends two writes at once with `key`; whether storage was inside both upserts at the same time. */
  async function overlapped(key: string, keyspace: string): Promise<boolean> {
    const storage = t.deps.storage;
    const upsert = storage.upsertVectors.bind(storage);
    let inside = 0;
    let both = false;
    let release: () => void = () => undefined;
    const bothIn = new Promise<void>((r) => (release = r));
    storage.upsertVectors = async (...a) => {
      if (++inside === 2) {
        both = true;
        release();
      }
      // The first waits for the second (a little while at most: taking turns, it never comes).
      await Promise.race([bothIn, new Promise((r) => setTimeout(r, 1500))]);
      try {
        return await upsert(...a);
      } finally {
        inside--;
      }
    };
    try {
      const write = (k: string) => t.call('POST', '/v1/vector/write', { keyspace, table: 'w', key: k, vector: [1, 2, 3, 4] }, key);
      const answers = await Promise.all([write('a'), write('b')]);
      assert.deepEqual(answers.map((x) => x.statusCode), [200, 200]);
      return both;
    } finally {
      storage.upsertVectors = upsert;
    }
  }

  it('run at once for a plan without a vector limit (the administrator), one after the other for a limited plan', async () => {
    const admin = (await t.call('POST', '/v1/keyspaces/create', { keyspace: 'admin_space' })).statusCode;
    assert.equal(admin, 200);
    assert.equal((await t.call('POST', '/v1/vector/write', { keyspace: 'admin_space', table: 'w', key: 'x', vector: [1, 2, 3, 4] })).statusCode, 200);
    assert.equal(await overlapped(ADMIN_KEY, 'admin_space'), true);

    const id = (await t.call('POST', '/v1/user/', { name: 'f', email: 'free@example.com' })).json().account_id as string;
    const free = await t.makeKey('Write', ['*'], id);
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'free_space' }, free)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/vector/write', { keyspace: 'free_space', table: 'w', key: 'x', vector: [1, 2, 3, 4] }, free)).statusCode, 200);
    assert.equal(await overlapped(free, 'free_space'), false);
  });
});
