import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_KEY, startTestApp, type TestApp } from './testing.ts';

// Fake embedder: these tests check authentication and authorisation only.
describe('authentication and authorisation', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake' })));
  after(() => t.close());

  it('answers 401 with a problem body for a missing, unknown or overlong key', async () => {
    for (const key of [null, 'wrong-key', 'x'.repeat(10_000)]) {
      const res = await t.call('POST', '/v1/search/', { query: 'a', keyspace: 'default_keyspace', table: 'vector' }, key);
      assert.equal(res.statusCode, 401, `${key}: ${res.body}`);
      assert.equal(res.json().code, 'unauthenticated');
    }
  });

  it('authenticates before reading the body: a bad key with an invalid body is 401, not 400', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/vector/batch', headers: { 'content-type': 'application/json' }, payload: '{not json' });
    assert.equal(res.statusCode, 401);
  });

  it('lets the exempt routes through without a key', async () => {
    for (const url of ['/v1', '/v1/healthcheck/', '/v1/healthcheck', '/v1/openapi.json']) {
      const res = await t.call('GET', url, undefined, null);
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    }
  });

  it('enforces Read < Write < All', async () => {
    const read = await t.makeKey('Read');
    const write = await t.makeKey('Write');
    const search = { query: 'a', keyspace: 'default_keyspace', table: 'vector' };
    const vec = { keyspace: 'default_keyspace', table: 'perm', vector: [1, 2] };
    assert.equal((await t.call('POST', '/v1/search/', search, read)).statusCode, 200);
    const denied = await t.call('POST', '/v1/vector/write', vec, read);
    assert.equal(denied.statusCode, 403);
    assert.equal(denied.json().code, 'forbidden');
    assert.equal((await t.call('POST', '/v1/vector/write', vec, write)).statusCode, 200);
    assert.equal((await t.call('GET', '/v1/system/info', undefined, write)).statusCode, 403);
    assert.equal((await t.call('GET', '/v1/system/info', undefined, ADMIN_KEY)).statusCode, 200);
  });

  it('keeps a key inside its resources', async () => {
    await t.call('POST', '/v1/keyspaces/create', { keyspace: 'alpha' });
    await t.call('POST', '/v1/keyspaces/create', { keyspace: 'beta' });
    const alphaOnly = await t.makeKey('Write', ['alpha']);
    const inAlpha = await t.call('POST', '/v1/vector/write', { keyspace: 'alpha', table: 'vector', text: 'x' }, alphaOnly);
    assert.equal(inAlpha.statusCode, 200, inAlpha.body);
    const inBeta = await t.call('POST', '/v1/vector/write', { keyspace: 'beta', table: 'vector', text: 'x' }, alphaOnly);
    assert.equal(inBeta.statusCode, 403);
    const search = await t.call('POST', '/v1/search/', { query: 'x', keyspace: 'beta', table: 'vector' }, alphaOnly);
    assert.equal(search.statusCode, 403);
    const list = await t.call('GET', '/v1/keyspaces/list', undefined, alphaOnly);
    assert.deepEqual(list.json().keyspaces.map((k: { keyspace: string }) => k.keyspace), ['alpha']);
    // A metadata batch touching one keyspace outside the key is refused whole.
    const meta = await t.call('POST', '/v1/metadata/batch', { records: [{ keyspace: 'alpha', table: 'vector', source_file: 'a' }, { keyspace: 'beta', table: 'vector', source_file: 'b' }] }, alphaOnly);
    assert.equal(meta.statusCode, 403);
  });

  it('hides another user’s keyspace as missing', async () => {
    const other = await t.deps.storage.createUser({ name: 'Other', email: 'other@example.com' });
    const otherKey = await t.makeKey('Write', ['*'], other.id);
    const res = await t.call('POST', '/v1/search/', { query: 'x', keyspace: 'alpha', table: 'vector' }, otherKey);
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().code, 'keyspace_not_found');
  });

  it('keeps an All key limited to some keyspaces to its own user and keyspaces; an All key over * administers', async () => {
    const tenant = await t.deps.storage.createUser({ name: 'Tenant', email: 'tenant@example.com' });
    const neighbour = await t.deps.storage.createUser({ name: 'Neighbour', email: 'neighbour@example.com' });
    const tenantWrite = await t.makeKey('Write', ['*'], tenant.id);
    const neighbourWrite = await t.makeKey('Write', ['*'], neighbour.id);
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'tenant_ks' }, tenantWrite)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'neighbour_ks' }, neighbourWrite)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/vector/write', { keyspace: 'neighbour_ks', table: 'vector', key: 'secret', text: 'the neighbour\'s row' }, neighbourWrite)).statusCode, 200);
    // An All key of the tenant whose resources also name the neighbour's keyspace.
    const scoped = await t.makeKey('All', ['tenant_ks', 'neighbour_ks'], tenant.id);
    const neighbourKeyId = (await t.call('GET', `/v1/keys/retrieve?user_id=${neighbour.id}`)).json().keys[0].key_id as string;

    const refused: [string, 'GET' | 'POST', string, unknown?][] = [
      ['every user', 'GET', '/v1/users/'],
      ["another user's record", 'GET', `/v1/user/${neighbour.id}`],
      ['making a user', 'POST', '/v1/user/', { name: 'Made', email: 'made@example.com' }],
      ["another user's keys", 'GET', `/v1/keys/retrieve?user_id=${neighbour.id}`],
      ['a key for another user', 'POST', '/v1/keys/generate', { user_id: neighbour.id, permissions: 'Read', resources: ['neighbour_ks'] }],
      ['a key beyond its keyspaces', 'POST', '/v1/keys/generate', { permissions: 'Read', resources: ['other_ks'] }],
      ['a key over every keyspace', 'POST', '/v1/keys/generate', { permissions: 'Read', resources: ['*'] }],
      ['metrics', 'GET', '/metrics'],
      ['system information', 'GET', '/v1/system/info'],
      ['containers', 'GET', '/v1/docker/'],
    ];
    for (const [what, method, url, body] of refused) {
      const res = await t.call(method, url, body, scoped);
      assert.equal(res.statusCode, 403, `${what}: ${res.body}`);
      assert.equal(res.json().code, 'forbidden', what);
    }
    // Another user's key and keyspace are as if missing, even where its resources name them.
    for (const url of ['/v1/keys/revoke', '/v1/keys/rotate']) {
      const res = await t.call('POST', url, { key_id: neighbourKeyId }, scoped);
      assert.equal(res.statusCode, 404, `${url}: ${res.body}`);
      assert.equal(res.json().code, 'key_not_found');
    }
    for (const [url, body] of [
      ['/v1/vector/get', { keyspace: 'neighbour_ks', table: 'vector', key: 'secret' }],
      ['/v1/search/', { query: 'row', keyspace: 'neighbour_ks', table: 'vector' }],
      ['/v1/vector/write', { keyspace: 'neighbour_ks', table: 'vector', key: 'planted', vector: Array(384).fill(0.1) }],
    ] as const) {
      const res = await t.call('POST', url, body, scoped);
      assert.equal(res.statusCode, 404, `${url}: ${res.body}`);
      assert.equal(res.json().code, 'keyspace_not_found');
    }
    const listed = (await t.call('GET', '/v1/keyspaces/list', undefined, scoped)).json().keyspaces.map((k: { keyspace: string }) => k.keyspace);
    assert.deepEqual(listed, ['tenant_ks']);
    const chatFiles = await t.call('POST', '/v1/chat/', { query: '/keyspaces' }, scoped);
    assert.ok(!chatFiles.body.includes('neighbour_ks'), chatFiles.body);
    // The neighbour's files are not listed, although the key's resources name their keyspace.
    const content = Buffer.from('the neighbour\'s file');
    await t.deps.storage.replaceFile(
      { keyspace: 'neighbour_ks', table: 'vector', name: 'private.txt', size: content.length, sha256: 'x'.repeat(64), type: 'txt', chunks: 0, createdAt: new Date().toISOString() },
      content, [], { keyspace: 'neighbour_ks', table: 'vector', source_file: 'private.txt', raw_value: '', source_type: 'txt', processing_details: '{}' },
    );
    const files = await t.call('GET', '/v1/files/', undefined, scoped);
    assert.equal(files.statusCode, 200, files.body);
    assert.deepEqual(files.json().files, []);
    assert.deepEqual((await t.call('GET', '/v1/files/')).json().files, ['private.txt'], 'the administrator sees it');

    // What it may do: its own user's keys within its keyspaces.
    const made = await t.call('POST', '/v1/keys/generate', { permissions: 'Write', resources: ['tenant_ks'] }, scoped);
    assert.equal(made.statusCode, 200, made.body);
    const own = (await t.call('GET', '/v1/keys/retrieve', undefined, scoped)).json().keys as { key_id: string; resources: string[] }[];
    assert.ok(own.some((k) => k.key_id === made.json().key_id));
    assert.ok(own.every((k) => k.resources.every((r) => r === 'tenant_ks' || r === 'neighbour_ks')), 'not its user\'s keys over *');
    assert.equal((await t.call('POST', '/v1/keys/revoke', { key_id: made.json().key_id }, scoped)).statusCode, 200);

    // The administrator may do all of it.
    for (const [what, method, url, body] of refused.filter(([w]) => w !== 'containers' && w !== 'making a user')) {
      assert.equal((await t.call(method, url, body)).statusCode, 200, what);
    }
    assert.equal((await t.call('POST', '/v1/vector/get', { keyspace: 'neighbour_ks', table: 'vector', key: 'secret' })).statusCode, 200);
  });

  it('answers an address 429 after VSS_MAX_AUTH_FAILURES_PER_MINUTE invalid keys, and still lets its valid keys through', async () => {
    const own = await startTestApp({ model: 'fake', env: { VSS_MAX_AUTH_FAILURES_PER_MINUTE: '3' } });
    try {
      const search = { query: 'a', keyspace: 'default_keyspace', table: 'vector' };
      const from = (remoteAddress: string, key: string | null) =>
        own.app.inject({ method: 'POST', url: '/v1/search/', remoteAddress, payload: search, headers: key === null ? {} : { 'x-api-key': key } });
      // A valid key and a refused permission are not failures.
      const read = await own.makeKey('Read');
      assert.equal((await from('10.0.0.1', ADMIN_KEY)).statusCode, 200);
      assert.equal((await own.app.inject({ method: 'POST', url: '/v1/vector/write', remoteAddress: '10.0.0.1', headers: { 'x-api-key': read }, payload: { keyspace: 'default_keyspace', table: 'vector', vector: [1] } })).statusCode, 403);
      for (const key of ['wrong-1', null, 'wrong-2']) assert.equal((await from('10.0.0.1', key)).statusCode, 401);
      const turned = await from('10.0.0.1', 'wrong-3');
      assert.equal(turned.statusCode, 429);
      assert.equal(turned.json().code, 'rate_limited');
      assert.ok(Number(turned.headers['retry-after']) > 0 && Number(turned.headers['retry-after']) <= 60, String(turned.headers['retry-after']));
      // Valid keys from that very address are not refused for the failures of others.
      assert.equal((await from('10.0.0.1', ADMIN_KEY)).statusCode, 200);
      assert.equal((await from('10.0.0.1', read)).statusCode, 200);
      assert.equal((await from('10.0.0.2', 'wrong')).statusCode, 401);
      assert.equal((await own.app.inject({ method: 'GET', url: '/v1/healthcheck/', remoteAddress: '10.0.0.1' })).statusCode, 200);
    } finally {
      await own.close();
    }
  });

  it('survives a flood of 200 wrong keys from one address: its later answers are 429, a healthcheck meanwhile answers within 1 s, a valid key then gets 200', async () => {
    const own = await startTestApp({ model: 'fake', env: { VSS_MAX_AUTH_FAILURES_PER_MINUTE: '20' } });
    try {
      const search = { query: 'a', keyspace: 'default_keyspace', table: 'vector' };
      const flood = Array.from({ length: 200 }, (_, i) =>
        own.app.inject({ method: 'POST', url: '/v1/search/', remoteAddress: '10.1.1.1', payload: search, headers: { 'x-api-key': `vss_wrong-${i}` } }),
      );
      const started = performance.now();
      const health = await own.app.inject({ method: 'GET', url: '/v1/healthcheck/', remoteAddress: '10.1.1.1' });
      const healthMs = performance.now() - started;
      assert.equal(health.statusCode, 200);
      assert.ok(healthMs < 1000, `healthcheck took ${healthMs.toFixed(0)} ms`);
      const answers = await Promise.all(flood);
      const refused = answers.filter((r) => r.statusCode === 429);
      assert.deepEqual([answers.filter((r) => r.statusCode === 401).length, refused.length], [20, 180]);
      for (const r of refused) {
        assert.equal(r.headers['content-type'], 'application/problem+json; charset=utf-8');
        assert.equal(r.json().code, 'rate_limited');
        assert.ok(Number(r.headers['retry-after']) >= 1 && Number(r.headers['retry-after']) <= 60, String(r.headers['retry-after']));
      }
      const valid = await own.app.inject({ method: 'POST', url: '/v1/search/', remoteAddress: '10.1.1.1', payload: search, headers: { 'x-api-key': ADMIN_KEY } });
      assert.equal(valid.statusCode, 200, valid.body);
    } finally {
      await own.close();
    }
  });

  it('slows failures from all addresses together past VSS_MAX_AUTH_FAILURES_PER_MINUTE_GLOBAL, valid keys still passing', async () => {
    const own = await startTestApp({ model: 'fake', env: { VSS_MAX_AUTH_FAILURES_PER_MINUTE: '3', VSS_MAX_AUTH_FAILURES_PER_MINUTE_GLOBAL: '5' } });
    try {
      const from = (remoteAddress: string, key: string) => own.app.inject({ method: 'GET', url: '/v1/keyspaces/list', remoteAddress, headers: { 'x-api-key': key } });
      // Five addresses, one wrong key each: all within their own limit and, together, the budget.
      for (let i = 1; i <= 5; i++) assert.equal((await from(`10.2.0.${i}`, 'wrong')).statusCode, 401, `address ${i}`);
      const slowed = await from('10.2.0.99', 'wrong');
      assert.equal(slowed.statusCode, 429, 'a fresh address is slowed once the budget is spent');
      assert.ok(Number(slowed.headers['retry-after']) >= 1);
      assert.equal(slowed.json().code, 'rate_limited');
      assert.equal((await from('10.2.0.99', ADMIN_KEY)).statusCode, 200);
    } finally {
      await own.close();
    }
  });

  it('counts invalid keys per client behind a trusted proxy (VSS_TRUST_PROXY), and ignores X-Forwarded-For otherwise', async () => {
    for (const trust of [true, false]) {
      const own = await startTestApp({ model: 'fake', env: { VSS_MAX_AUTH_FAILURES_PER_MINUTE: '2', ...(trust ? { VSS_TRUST_PROXY: '10.9.9.9' } : {}) } });
      try {
        const via = (client: string, key: string) =>
          own.app.inject({ method: 'POST', url: '/v1/search/', remoteAddress: '10.9.9.9', headers: { 'x-forwarded-for': client, 'x-api-key': key }, payload: { query: 'a', keyspace: 'default_keyspace', table: 'vector' } });
        for (const key of ['wrong-1', 'wrong-2']) assert.equal((await via('192.0.2.1', key)).statusCode, 401);
        assert.equal((await via('192.0.2.1', 'wrong-3')).statusCode, 429);
        // Another client through the same proxy: its own count when the proxy is trusted; the proxy's when not.
        assert.equal((await via('192.0.2.2', 'wrong-4')).statusCode, trust ? 401 : 429, `trust ${trust}`);
        assert.equal((await via('192.0.2.1', ADMIN_KEY)).statusCode, 200, 'a valid key passes either way');
      } finally {
        await own.close();
      }
    }
  });

  it('echoes x-request-id, or makes one', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1', headers: { 'x-request-id': 'abc-123' } });
    assert.equal(res.headers['x-request-id'], 'abc-123');
    const made = await t.call('GET', '/v1/nothing-here');
    assert.equal(made.statusCode, 404);
    assert.match(made.headers['x-request-id'] as string, /^[0-9a-f-]{36}$/);
    assert.equal(made.json().request_id, made.headers['x-request-id']);
  });

  it('never answers a secret', async () => {
    const env = await t.call('GET', '/v1/env/');
    assert.equal(env.statusCode, 200);
    assert.ok(!env.body.includes(ADMIN_KEY));
    for (const banned of ['LICENSE_KEY', 'CUSTOMER_ID', 'admin_key', 'secret']) assert.ok(!env.body.includes(banned), banned);
  });
});

describe('logs', () => {
  it('carry request ids and never a key, even at trace level', async () => {
    const lines: string[] = [];
    const stream = { write: (l: string) => void lines.push(l) };
    const { loggerOptions } = await import('./logging.ts');
    const t = await startTestApp({ model: 'fake', logger: loggerOptions('trace', stream) });
    try {
      const wrong = 'vss_this-is-a-wrong-key-that-must-not-be-logged';
      await t.call('GET', '/v1/keyspaces/list');
      await t.call('GET', '/v1/keyspaces/list', undefined, wrong);
      await t.app.inject({ method: 'GET', url: '/v1', headers: { 'x-request-id': 'trace-me-123' } });
      const all = lines.join('');
      assert.ok(lines.length >= 6, `${lines.length} lines`);
      assert.ok(!all.includes(ADMIN_KEY), 'the admin key was logged');
      assert.ok(!all.includes(wrong), 'a wrong key was logged');
      const parsed = lines.map((l) => JSON.parse(l) as { reqId?: string; level: number });
      assert.ok(parsed.some((p) => p.reqId === 'trace-me-123'));
      assert.ok(parsed.filter((p) => p.reqId !== undefined).length >= 6);
    } finally {
      await t.close();
    }
  });
});
