import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashKey } from '../service/keys.ts';
import { ADMIN_KEY, multipart, startTestApp, type TestApp } from './testing.ts';

/**
 * Every route × every kind of caller. Fake embedder: statuses only, no meaning.
 * Callers: none, a wrong key, a revoked key, the owner's Read key (on routes that need more),
 * another user's Write key (on routes that name a keyspace), and the administrator's All key.
 */
type Need = 'public' | 'Read' | 'Write' | 'All';
interface Row {
  method: 'GET' | 'POST' | 'DELETE';
  url: string;
  /** The documented route (method + path pattern) this row covers. */
  route: string;
  body?: unknown;
  multipart?: boolean;
  need: Need;
  /** The route names a keyspace: another user's key must get 404 there. */
  scoped: boolean;
  /** Status for an allowed caller. */
  ok: number;
}

const KS = 'owned_ks';
const upload = () => multipart([{ name: 'keyspace', value: KS }, { name: 'file', filename: 'doc.txt', content: 'A short document about lighthouses and their keepers.' }]);

describe('authorisation matrix: every route × every caller', () => {
  let t: TestApp;
  let ownerRead: string;
  let ownerRevoked: string;
  let strangerWrite: string;
  let throwawayKeyId: string;
  let ownerId: string;
  const rows: Row[] = [];

  before(async () => {
    t = await startTestApp({ model: 'fake', env: { DOCKER_HOST: 'unix:///nonexistent/docker.sock' } });
    const owner = await t.deps.storage.createUser({ name: 'Owner', email: 'owner@example.com' });
    const stranger = await t.deps.storage.createUser({ name: 'Stranger', email: 'stranger@example.com' });
    ownerId = owner.id;
    const ownerWrite = await t.makeKey('Write', ['*'], owner.id);
    ownerRead = await t.makeKey('Read', ['*'], owner.id);
    ownerRevoked = await t.makeKey('Write', ['*'], owner.id);
    strangerWrite = await t.makeKey('Write', ['*'], stranger.id);
    await t.deps.storage.revokeApiKey((await t.deps.storage.findApiKeyByHash(hashKey(ownerRevoked)))!.id);
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: KS }, ownerWrite)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/vector/write', { keyspace: KS, table: 'vector', key: 'k1', text: 'hello' }, ownerWrite)).statusCode, 200);
    const up = upload();
    assert.equal((await t.app.inject({ method: 'POST', url: '/v1/embed/', headers: { ...up.headers, 'x-api-key': ownerWrite }, payload: up.payload })).statusCode, 200);
    throwawayKeyId = (await t.call('POST', '/v1/keys/generate', { name: 'throwaway', permissions: 'Read' })).json().key_id;

    const vec = Array.from({ length: 384 }, (_, i) => (i === 0 ? 1 : 0));
    rows.push(
      { method: 'GET', url: '/v1', route: 'GET /v1', need: 'public', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/healthcheck/', route: 'GET /v1/healthcheck/', need: 'public', scoped: false, ok: 200 },
      { method: 'GET', url: '/metrics', route: 'GET /metrics', need: 'All', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/stripe/webhook/checkout', route: 'POST /v1/stripe/webhook/checkout', body: {}, need: 'public', scoped: false, ok: 503 },
      { method: 'GET', url: '/v1/env/', route: 'GET /v1/env/', need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/system/info', route: 'GET /v1/system/info', need: 'All', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/docker/', route: 'GET /v1/docker/', need: 'All', scoped: false, ok: 503 },
      { method: 'POST', url: '/v1/search/', route: 'POST /v1/search/', body: { query: 'hello', keyspace: KS, table: 'vector' }, need: 'Read', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/query/', route: 'POST /v1/query/', body: { query: 'hello', selectedContainerId: KS }, need: 'Read', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/chat/', route: 'POST /v1/chat/', body: { query: 'what about lighthouses?', keyspace: KS }, need: 'Read', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/vector/write', route: 'POST /v1/vector/write', body: { keyspace: KS, table: 'vector', key: 'k2', vector: vec }, need: 'Write', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/vector/batch', route: 'POST /v1/vector/batch', body: { keyspace: KS, table: 'vector', vector: [vec] }, need: 'Write', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/vector/get', route: 'POST /v1/vector/get', body: { keyspace: KS, table: 'vector', key: 'k1' }, need: 'Read', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/vector/list', route: 'POST /v1/vector/list', body: { keyspace: KS, table: 'vector' }, need: 'Read', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/vector/count', route: 'POST /v1/vector/count', body: { keyspace: KS, table: 'vector' }, need: 'Read', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/vector/delete', route: 'POST /v1/vector/delete', body: { keyspace: KS, table: 'vector', keys: ['absent'] }, need: 'Write', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/metadata/write', route: 'POST /v1/metadata/write', body: { keyspace: KS, table: 'vector', source_file: 'a' }, need: 'Write', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/metadata/batch', route: 'POST /v1/metadata/batch', body: { records: [{ keyspace: KS, table: 'vector', source_file: 'b' }] }, need: 'Write', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/keyspaces/create', route: 'POST /v1/keyspaces/create', body: {}, need: 'Write', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keyspaces/autoprovision', route: 'POST /v1/keyspaces/autoprovision', need: 'Write', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keyspaces/list', route: 'POST /v1/keyspaces/list', need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/keyspaces/list', route: 'GET /v1/keyspaces/list', need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keyspaces/table/create', route: 'POST /v1/keyspaces/table/create', body: { keyspace: KS, table: 'extra', dimension: 4 }, need: 'Write', scoped: true, ok: 200 },
      { method: 'GET', url: '/v1/generate/?text=hi', route: 'GET /v1/generate/', need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/embeddings', route: 'POST /v1/embeddings', body: { input: 'hi' }, need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/embed/', route: 'POST /v1/embed/', multipart: true, need: 'Write', scoped: true, ok: 200 },
      { method: 'GET', url: '/v1/files/', route: 'GET /v1/files/', need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: `/v1/files/${KS}/vector/doc.txt`, route: 'GET /v1/files/{keyspace}/{table}/{*}', need: 'Read', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/user/', route: 'POST /v1/user/', body: { name: 'New', email: 'new@example.com' }, need: 'All', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/user/', route: 'GET /v1/user/', need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/users/', route: 'GET /v1/users/', need: 'All', scoped: false, ok: 200 },
      { method: 'GET', url: `/v1/user/${ownerId}`, route: 'GET /v1/user/{account_id}', need: 'All', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/connection/', route: 'POST /v1/connection/', body: { type: 'github', id: 'x' }, need: 'Write', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keys/generate', route: 'POST /v1/keys/generate', body: { permissions: 'Read' }, need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/keys/retrieve', route: 'GET /v1/keys/retrieve', need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keys/rotate', route: 'POST /v1/keys/rotate', body: { key_id: throwawayKeyId }, need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keys/revoke', route: 'POST /v1/keys/revoke', body: { key_id: throwawayKeyId }, need: 'Read', scoped: false, ok: 200 },
      // Destructive: last.
      { method: 'DELETE', url: `/v1/files/${KS}/vector/doc.txt`, route: 'DELETE /v1/files/{keyspace}/{table}/{*}', need: 'Write', scoped: true, ok: 200 },
    );
  });
  after(() => t.close());

  const send = (row: Row, key: string | null) => {
    const headers: Record<string, string> = key === null ? {} : { 'x-api-key': key };
    if (row.multipart) {
      const form = upload();
      return t.app.inject({ method: row.method, url: row.url, headers: { ...headers, ...form.headers }, payload: form.payload });
    }
    return t.app.inject({ method: row.method, url: row.url, headers, ...(row.body === undefined ? {} : { payload: row.body as object }) });
  };

  it('covers every documented route', async () => {
    const doc = (await t.call('GET', '/v1/openapi.json', undefined, null)).json() as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
    const covered = new Set(rows.map((r) => r.route));
    const missing = documented.filter((r) => !covered.has(r) && !r.startsWith('GET /v1/docs'));
    assert.deepEqual(missing, []);
  });

  it('answers each caller as the route requires', async () => {
    const failures: string[] = [];
    const expect = (row: Row, who: string, got: number, want: number) => {
      if (got !== want) failures.push(`${row.method} ${row.url} as ${who}: ${got}, expected ${want}`);
    };
    for (const row of rows) {
      if (row.need === 'public') {
        expect(row, 'no key', (await send(row, null)).statusCode, row.ok);
        continue;
      }
      expect(row, 'no key', (await send(row, null)).statusCode, 401);
      expect(row, 'a wrong key', (await send(row, 'vss_wrong-key-wrong-key-wrong-key-wrong-key-wrong')).statusCode, 401);
      expect(row, 'a revoked key', (await send(row, ownerRevoked)).statusCode, 401);
      if (row.need !== 'Read') expect(row, 'a Read key', (await send(row, ownerRead)).statusCode, 403);
      if (row.scoped) expect(row, "another user's key", (await send(row, strangerWrite)).statusCode, row.need === 'All' ? 403 : 404);
      expect(row, 'the All key', (await send(row, ADMIN_KEY)).statusCode, row.ok);
    }
    assert.deepEqual(failures, []);
  });

  it('refuses a 30 MB body without a key before parsing it', async () => {
    // Not JSON at all: had it been parsed, the answer would be 400, not 401.
    const payload = Buffer.alloc(30 * 1024 * 1024, 'x');
    const started = performance.now();
    const res = await t.app.inject({ method: 'POST', url: '/v1/vector/batch', headers: { 'content-type': 'application/json' }, payload });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().code, 'unauthenticated');
    const wrong = await t.app.inject({ method: 'POST', url: '/v1/vector/batch', headers: { 'content-type': 'application/json', 'x-api-key': 'nope' }, payload });
    assert.equal(wrong.statusCode, 401);
    assert.ok(performance.now() - started < 10_000);
  });
});
