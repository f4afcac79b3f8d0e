import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Stripe from 'stripe';
import { ADMIN_KEY, multipart, startTestApp, type TestApp } from './testing.ts';

const WEBHOOK_SECRET = 'whsec_quota_test';

// Fake embedder: accounts, keys, tenancy and quotas; no meaning checked.
describe('users, keys, connections, tenancy and quotas', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake', env: { VSS_FREE_MAX_VECTORS: '5', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET } })));
  after(() => t.close());

  const newUser = async (email: string) => {
    const res = await t.call('POST', '/v1/user/', { name: email.split('@')[0], email });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { account_id: string; plan: string };
  };
  const keyFor = async (userId: string, permissions = 'Write', resources?: string[]) => {
    const res = await t.call('POST', '/v1/keys/generate', { name: 'k', user_id: userId, permissions, ...(resources ? { resources } : {}) });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { key: string; key_id: string };
  };

  it('creates users (409 on a taken e-mail, 400 on a bad one) and shows the caller its own', async () => {
    const u = await newUser('ann@example.com');
    assert.equal(u.plan, 'free');
    assert.ok(u.account_id);
    assert.equal((await t.call('POST', '/v1/user/', { name: 'x', email: 'ANN@example.com' })).statusCode, 409);
    const bad = await t.call('POST', '/v1/user/', { name: 'x', email: 'not-an-email' });
    assert.equal(bad.statusCode, 400);
    assert.ok(bad.json().errors.some((e: { path: string }) => e.path === '/body/email'));
    const { key } = await keyFor(u.account_id, 'Read');
    const me = await t.call('GET', '/v1/user/', undefined, key);
    assert.equal(me.statusCode, 200, me.body);
    assert.equal(me.json().email, 'ann@example.com');
    assert.equal(me.json().limits.max_vectors, 5);
    assert.equal((await t.call('POST', '/v1/user/', { name: 'y', email: 'y@example.com' }, key)).statusCode, 403);
    assert.equal((await t.call('GET', '/v1/users/', undefined, key)).statusCode, 403);
    const all = await t.call('GET', '/v1/users/');
    assert.ok(all.json().users.some((x: { email: string }) => x.email === 'ann@example.com'));
    assert.equal((await t.call('GET', `/v1/user/${u.account_id}`)).json().email, 'ann@example.com');
    assert.equal((await t.call('GET', '/v1/user/nobody')).statusCode, 404);
  });

  it('answers a secret once, lists keys without secrets, and never stores the secret', async () => {
    const u = await newUser('bob@example.com');
    const made = await keyFor(u.account_id, 'Write');
    assert.match(made.key, /^vss_[A-Za-z0-9_-]{43}$/);
    const list = await t.call('GET', '/v1/keys/retrieve', undefined, made.key);
    assert.equal(list.statusCode, 200);
    assert.ok(!list.body.includes(made.key));
    assert.ok(!/hash/.test(list.body));
    assert.deepEqual(list.json().keys.map((k: { key_id: string }) => k.key_id), [made.key_id]);
    const stored = await t.deps.storage.listApiKeys(u.account_id);
    assert.ok(stored.every((k) => k.hash !== made.key && !k.hash.includes(made.key)));
  });

  it('refuses escalation', async () => {
    const u = await newUser('carol@example.com');
    const other = await newUser('dave@example.com');
    const read = await keyFor(u.account_id, 'Read');
    for (const permissions of ['Write', 'All']) {
      const res = await t.call('POST', '/v1/keys/generate', { permissions }, read.key);
      assert.equal(res.statusCode, 403, `Read minting ${permissions}`);
    }
    assert.equal((await t.call('POST', '/v1/keys/generate', { permissions: 'Read' }, read.key)).statusCode, 200);
    const write = await keyFor(u.account_id, 'Write');
    const forOther = await t.call('POST', '/v1/keys/generate', { user_id: other.account_id, permissions: 'Read' }, write.key);
    assert.equal(forOther.statusCode, 403);
    const narrow = await keyFor(u.account_id, 'Write', ['a']);
    assert.equal((await t.call('POST', '/v1/keys/generate', { resources: ['a', 'b'] }, narrow.key)).statusCode, 403);
    assert.equal((await t.call('POST', '/v1/keys/generate', { resources: ['*'] }, narrow.key)).statusCode, 403);
    const ok = await t.call('POST', '/v1/keys/generate', { resources: ['a'], permissions: 'Read' }, narrow.key);
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(ok.json().resources, ['a']);
    // A weaker key cannot revoke a stronger one of the same user, nor a narrower one a wider.
    assert.equal((await t.call('POST', '/v1/keys/revoke', { key_id: write.key_id }, read.key)).statusCode, 403);
    const readAll = await keyFor(u.account_id, 'Read');
    const readA = await keyFor(u.account_id, 'Read', ['a']);
    const wider = await t.call('POST', '/v1/keys/revoke', { key_id: readAll.key_id }, readA.key);
    assert.equal(wider.json().code, 'forbidden', wider.body);
    assert.equal((await t.call('POST', '/v1/keys/rotate', { key_id: readAll.key_id }, readA.key)).json().code, 'forbidden');
    assert.equal((await t.call('GET', '/v1/user/', undefined, readAll.key)).statusCode, 200);
    // An All key limited to one keyspace cannot revoke the administrator's key (All, *).
    const adminKeyId = (await t.call('GET', '/v1/user/')).json().key.key_id;
    const scopedAdmin = await t.makeKey('All', ['a']);
    assert.equal((await t.call('POST', '/v1/keys/revoke', { key_id: adminKeyId }, scopedAdmin)).json().code, 'forbidden');
    assert.equal((await t.call('GET', '/v1/user/')).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/keys/revoke', { key_id: readA.key_id }, readAll.key)).statusCode, 200);
  });

  it('revokes and rotates: the old key works until revoked, then gets the same 401 as an unknown one', async () => {
    const u = await newUser('erin@example.com');
    const first = await keyFor(u.account_id, 'Write');
    const rotated = await t.call('POST', '/v1/keys/rotate', { key_id: first.key_id }, first.key);
    assert.equal(rotated.statusCode, 200, rotated.body);
    const second = rotated.json();
    assert.equal(second.rotated_from, first.key_id);
    assert.equal((await t.call('GET', '/v1/user/', undefined, first.key)).statusCode, 200);
    assert.equal((await t.call('GET', '/v1/user/', undefined, second.key)).statusCode, 200);
    const revoked = await t.call('POST', '/v1/keys/revoke', { key_id: first.key_id }, second.key);
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.ok(revoked.json().revoked_at);
    const gone = await t.call('GET', '/v1/user/', undefined, first.key);
    const unknown = await t.call('GET', '/v1/user/', undefined, 'vss_' + 'x'.repeat(43));
    assert.equal(gone.statusCode, 401);
    assert.deepEqual({ ...(gone.json() as object), request_id: 0 }, { ...(unknown.json() as object), request_id: 0 });
    assert.equal((await t.call('GET', '/v1/user/', undefined, second.key)).statusCode, 200);
    // Another user's key id is not found, not forbidden.
    const stranger = await keyFor((await newUser('frank@example.com')).account_id, 'All');
    assert.equal((await t.call('POST', '/v1/keys/revoke', { key_id: second.key_id }, stranger.key)).statusCode, 200);
  });

  it('records connections idempotently', async () => {
    const u = await newUser('gina@example.com');
    const { key } = await keyFor(u.account_id, 'Write');
    for (let i = 0; i < 2; i++) {
      const res = await t.call('POST', '/v1/connection/', { type: 'github', id: 'gina' }, key);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { type: 'github', id: 'gina', status: 'connected' });
    }
    assert.deepEqual((await t.call('GET', '/v1/user/', undefined, key)).json().connections, [{ type: 'github', id: 'gina' }]);
  });

  it('holds at most 100 connections a user, and refuses unprintable names and ids', async () => {
    const u = await newUser('hank@example.com');
    const { key } = await keyFor(u.account_id, 'Write');
    for (let i = 1; i < 100; i++) assert.equal((await t.call('POST', '/v1/connection/', { type: 'github', id: `h${i}` }, key)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/connection/', { type: 'gitlab', id: 'h100' }, key)).statusCode, 200);
    const over = await t.call('POST', '/v1/connection/', { type: 'gitlab', id: 'h101' }, key);
    assert.equal(over.json().code, 'validation_failed', over.body);
    // At the cap, a connection already held is still acknowledged (idempotent).
    assert.equal((await t.call('POST', '/v1/connection/', { type: 'github', id: 'h1' }, key)).statusCode, 200);
    assert.equal((await t.call('GET', '/v1/user/', undefined, key)).json().connections.length, 100);
    const bad = await t.call('POST', '/v1/connection/', { type: ' ', id: 'a\u0000b' }, key);
    assert.deepEqual(bad.json().errors.map((e: { path: string }) => e.path), ['/body/type', '/body/id']);
    for (const name of ['   ', 'x\ud800y', 'tab\there']) {
      const res = await t.call('POST', '/v1/user/', { name, email: `n${name.length}${name.charCodeAt(1)}@example.com` });
      assert.equal(res.statusCode, 400, `${JSON.stringify(name)}: ${res.body}`);
      assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/body/name']);
    }
  });

  it("keeps each user's keyspaces to themselves", async () => {
    const a = await newUser('hal@example.com');
    const b = await newUser('ivy@example.com');
    const ka = (await keyFor(a.account_id, 'Write')).key;
    const kb = (await keyFor(b.account_id, 'Write')).key;
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'hal_space' }, ka)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/vector/write', { keyspace: 'hal_space', table: 'vector', text: 'x' }, kb)).statusCode, 404);
    assert.equal((await t.call('POST', '/v1/search/', { query: 'x', keyspace: 'hal_space', table: 'vector' }, kb)).statusCode, 404);
    assert.equal((await t.call('POST', '/v1/search/', { query: 'x', keyspace: 'default_keyspace', table: 'vector' }, kb)).statusCode, 404);
    const listB = await t.call('GET', '/v1/keyspaces/list', undefined, kb);
    assert.deepEqual(listB.json().keyspaces, []);
    assert.equal((await t.call('POST', '/v1/search/', { query: 'x', keyspace: 'hal_space', table: 'vector' }, ADMIN_KEY)).statusCode, 200);
  });

  it('creates keyspaces only within the key\'s reach; a name anyone holds is 409; a half-made one is completed', async () => {
    const u = await newUser('kim@example.com');
    const other = await newUser('lee@example.com');
    const key = (await keyFor(u.account_id, 'Write')).key;
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'lee_space' }, (await keyFor(other.account_id, 'Write')).key)).statusCode, 200);
    for (const name of ['lee_space', 'default_keyspace']) {
      assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: name }, key)).json().code, 'already_exists', name);
    }
    // A key limited to named keyspaces makes only those it covers.
    const narrow = (await keyFor(u.account_id, 'Write', ['kim_a'])).key;
    assert.equal((await t.call('POST', '/v1/keyspaces/autoprovision', undefined, narrow)).json().code, 'forbidden');
    assert.equal((await t.call('POST', '/v1/keyspaces/create', {}, narrow)).json().code, 'forbidden');
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'kim_b' }, narrow)).json().code, 'forbidden');
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'kim_a' }, narrow)).statusCode, 200);
    // A keyspace whose table an earlier create failed to make: creating it again completes it.
    await t.deps.storage.createKeyspace({ name: 'kim_half', owner: u.account_id });
    const again = await t.call('POST', '/v1/keyspaces/create', { keyspace: 'kim_half' }, key);
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json().tables.map((x: { table: string }) => x.table), ['vector']);
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'kim_half' }, key)).json().code, 'already_exists');
  });

  it("answers a create of another tenant's keyspace name as of its own (taken, by nobody named), and 404 everywhere else", async () => {
    const u = await newUser('max@example.com');
    const other = await newUser('ned@example.com');
    const key = (await keyFor(u.account_id, 'Write')).key;
    const otherKey = (await keyFor(other.account_id, 'Write')).key;
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'max_space' }, key)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'ned_space' }, otherKey)).statusCode, 200);
    const theirs = await t.call('POST', '/v1/keyspaces/create', { keyspace: 'ned_space' }, key);
    const mine = await t.call('POST', '/v1/keyspaces/create', { keyspace: 'max_space' }, key);
    assert.deepEqual([theirs.statusCode, mine.statusCode], [409, 409]);
    const shape = (res: typeof theirs, name: string) => ({ ...(res.json() as object), request_id: 0, detail: res.json().detail.replace(name, '<name>') });
    assert.deepEqual(shape(theirs, 'ned_space'), shape(mine, 'max_space'));
    for (const leak of [other.account_id, 'ned@example.com', 'owner']) assert.ok(!theirs.body.includes(leak), theirs.body);

    assert.ok(!(await t.call('GET', '/v1/keyspaces/list', undefined, key)).body.includes('ned_space'));
    for (const [url, body] of [
      ['/v1/search/', { query: 'x', keyspace: 'ned_space', table: 'vector' }],
      ['/v1/keyspaces/table/create', { keyspace: 'ned_space', table: 'mine', dimension: 4 }],
      ['/v1/vector/count', { keyspace: 'ned_space', table: 'vector' }],
      ['/v1/metadata/write', { keyspace: 'ned_space', table: 'vector', source_file: 'a' }],
      ['/v1/query/', { query: 'x', selectedContainerId: 'ned_space' }],
    ] as const) {
      const res = await t.call('POST', url, body, key);
      assert.deepEqual([res.statusCode, res.json().code], [404, 'keyspace_not_found'], url);
    }
    assert.equal((await t.call('GET', '/v1/files/?keyspace=ned_space', undefined, key)).statusCode, 404);
  });

  it('checks the keyspace limit before whether another tenant holds a name, so that a caller at its limit learns nothing', async () => {
    const own = await startTestApp({ model: 'fake', env: { VSS_FREE_MAX_KEYSPACES: '1' } });
    try {
      const mk = async (email: string) => {
        const id = (await own.call('POST', '/v1/user/', { name: 'x', email })).json().account_id as string;
        return own.makeKey('Write', ['*'], id);
      };
      const full = await mk('full@example.com');
      const other = await mk('other@example.com');
      assert.equal((await own.call('POST', '/v1/keyspaces/create', { keyspace: 'other_space' }, other)).statusCode, 200);
      assert.equal((await own.call('POST', '/v1/keyspaces/create', { keyspace: 'full_space' }, full)).statusCode, 200);
      for (const name of ['other_space', 'free_name']) {
        const res = await own.call('POST', '/v1/keyspaces/create', { keyspace: name }, full);
        assert.deepEqual([res.statusCode, res.json().code], [403, 'quota_exceeded'], name);
      }
      assert.equal((await own.call('POST', '/v1/keyspaces/create', { keyspace: 'full_space' }, full)).json().code, 'already_exists', 'its own name is no secret');
    } finally {
      await own.close();
    }
  });

  it('enforces the plan vector limit with a clear 403, lifted by the paid plan', async () => {
    const u = await newUser('jo@example.com');
    const { key } = await keyFor(u.account_id, 'Write');
    await t.call('POST', '/v1/keyspaces/create', { keyspace: 'jo_space' }, key);
    const five = await t.call('POST', '/v1/vector/batch', { keyspace: 'jo_space', table: 'vector', vectors: Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, text: `t${i}` })) }, key);
    assert.equal(five.statusCode, 200, five.body);
    const sixth = await t.call('POST', '/v1/vector/write', { keyspace: 'jo_space', table: 'vector', key: 'k5', text: 'one more' }, key);
    assert.equal(sixth.statusCode, 403);
    assert.equal(sixth.json().code, 'quota_exceeded');
    assert.equal(sixth.json().limit, 5);
    // At the limit, rewriting stored keys adds no row: a retry or an update goes through,
    // also when a batch names one key twice.
    const rewrite = await t.call('POST', '/v1/vector/batch', { keyspace: 'jo_space', table: 'vector', vectors: [{ key: 'k0', text: 'new' }, { key: 'k1', text: 'x' }, { key: 'k1', text: 'y' }] }, key);
    assert.equal(rewrite.statusCode, 200, rewrite.body);
    const mixed = await t.call('POST', '/v1/vector/batch', { keyspace: 'jo_space', table: 'vector', vectors: [{ key: 'k2', text: 'new' }, { key: 'k6', text: 'adds one' }] }, key);
    assert.equal(mixed.json().code, 'quota_exceeded');
    // The real path: a checkout completed for this user, signed as Stripe signs it.
    const payload = JSON.stringify({ id: 'evt_quota', object: 'event', type: 'checkout.session.completed', created: Math.floor(Date.now() / 1000), data: { object: { object: 'checkout.session', payment_status: 'paid', client_reference_id: u.account_id } } });
    const hook = await t.app.inject({
      method: 'POST',
      url: '/v1/stripe/webhook/checkout',
      headers: { 'content-type': 'application/json', 'stripe-signature': Stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) },
      payload,
    });
    assert.equal(hook.json().status, 'applied', hook.body);
    const again = await t.call('POST', '/v1/vector/write', { keyspace: 'jo_space', table: 'vector', key: 'k5', text: 'one more' }, key);
    assert.equal(again.statusCode, 200, again.body);
  });
});

describe('keyspaces per user and tables per keyspace are limited (each table holds a file open)', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake', env: { VSS_FREE_MAX_KEYSPACES: '2' }, limits: { tablesPerKeyspace: 3 } })));
  after(() => t.close());

  it('refuses the keyspace past the plan, and the table past the keyspace limit by every way of making one', async () => {
    const user = (await t.call('POST', '/v1/user/', { name: 'm', email: 'm@example.com' })).json();
    const key = (await t.call('POST', '/v1/keys/generate', { user_id: user.account_id, permissions: 'Write' })).json().key;
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'm_one' }, key)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/keyspaces/autoprovision', undefined, key)).statusCode, 200);
    const third = await t.call('POST', '/v1/keyspaces/autoprovision', undefined, key);
    assert.equal(third.json().code, 'quota_exceeded', third.body);
    assert.equal(third.json().limit, 2);
    assert.equal((await t.call('GET', '/v1/user/', undefined, key)).json().limits.max_keyspaces, 2);
    // The keyspace holds its `vector` table; two more fit.
    assert.equal((await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'm_one', table: 't2', dimension: 2 }, key)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/vector/write', { keyspace: 'm_one', table: 't3', vector: [1, 2] }, key)).statusCode, 200);
    const refusals = [
      await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'm_one', table: 't4', dimension: 2 }, key),
      await t.call('POST', '/v1/vector/write', { keyspace: 'm_one', table: 't4', vector: [1, 2] }, key),
      await t.call('POST', '/v1/vector/batch', { keyspace: 'm_one', table: 't4', vectors: [{ text: 'x' }] }, key),
    ];
    const up = multipart([{ name: 'keyspace', value: 'm_one' }, { name: 'table', value: 't4' }, { name: 'file', filename: 'a.txt', content: 'Lighthouses.' }]);
    refusals.push(await t.app.inject({ method: 'POST', url: '/v1/embed/', headers: { ...up.headers, 'x-api-key': key }, payload: up.payload }));
    for (const res of refusals) assert.equal(res.json().code, 'quota_exceeded', res.body);
    // Existing tables take writes as before.
    assert.equal((await t.call('POST', '/v1/vector/write', { keyspace: 'm_one', table: 't3', vector: [2, 1] }, key)).statusCode, 200);
    // The administrator's plan has no keyspace limit.
    assert.equal((await t.call('POST', '/v1/keyspaces/autoprovision')).statusCode, 200);
  });
});

describe('per-user rate limit', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake', env: { VSS_FREE_REQUESTS_PER_MINUTE: '3' } })));
  after(() => t.close());

  it("answers 429 with Retry-After past the plan rate, counted over all of the user's keys", async () => {
    const user = (await t.call('POST', '/v1/user/', { name: 'r', email: 'r@example.com' })).json();
    const other = (await t.call('POST', '/v1/user/', { name: 'o', email: 'o@example.com' })).json();
    const k1 = (await t.call('POST', '/v1/keys/generate', { user_id: user.account_id, permissions: 'Read' })).json().key;
    const k2 = (await t.call('POST', '/v1/keys/generate', { user_id: user.account_id, permissions: 'Read' })).json().key;
    const k3 = (await t.call('POST', '/v1/keys/generate', { user_id: other.account_id, permissions: 'Read' })).json().key;
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) codes.push((await t.call('GET', '/v1/user/', undefined, k1)).statusCode);
    assert.deepEqual(codes, [200, 200, 200, 429]);
    const limited = await t.call('GET', '/v1/user/', undefined, k1);
    assert.equal(limited.json().code, 'rate_limited');
    assert.ok(Number(limited.headers['retry-after']) >= 1);
    // A second key of the same user shares the limit; another user's key does not.
    assert.equal((await t.call('GET', '/v1/user/', undefined, k2)).statusCode, 429);
    assert.equal((await t.call('GET', '/v1/user/', undefined, k3)).statusCode, 200);
  });
});

describe('GET /v1/user/ names the calling key', () => {
  it("answers the key's own permission and resources", async () => {
    const t = await startTestApp({ model: 'fake' });
    try {
      const read = await t.makeKey('Read', ['default_keyspace']);
      const me = (await t.call('GET', '/v1/user/', undefined, read)).json();
      assert.equal(me.key.permissions, 'Read');
      assert.deepEqual(me.key.resources, ['default_keyspace']);
      assert.equal((await t.call('GET', '/v1/user/')).json().key.permissions, 'All');
    } finally {
      await t.close();
    }
  });
});
