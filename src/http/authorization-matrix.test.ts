import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { hashKey } from '../service/keys.ts';
import { ADMIN_KEY, multipart, startTestApp, type TestApp } from './testing.ts';

/**
 * Every route × every kind of caller, and the table of docs/API.md that documents it. Fake
 * embedder: statuses only, no meaning. Callers: none, a wrong key, a revoked key, the owner's
 * Read and Write keys, the owner's `All` key scoped to its keyspace, another user's Write key
 * (on routes that name a keyspace), and the administrator (`All` over `*`).
 */
type Need = 'public' | 'Read' | 'Write' | 'Admin';
const KINDS = ['Read', 'Write', 'All scoped', 'All *'] as const;
type Kind = (typeof KINDS)[number];
/** What the route's need allows each kind of key (the docs table's first word: yes or no). */
const allows = (need: Exclude<Need, 'public'>, kind: Kind): boolean =>
  kind === 'All *' || (need !== 'Admin' && (kind !== 'Read' || need === 'Read'));
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
  /** Status for the scoped All key where its scope and not its permission decides (the docs cell says why). */
  scopedOk?: number;
  /** A body per kind of key, for routes that cannot be called twice alike. */
  bodyFor?: (kind: Kind) => unknown;
  /** Runs before each call that is to succeed (puts back what the last one removed). */
  prepare?: () => Promise<void>;
}

const KS = 'owned_ks';
const upload = () => multipart([{ name: 'keyspace', value: KS }, { name: 'file', filename: 'doc.txt', content: 'A short document about lighthouses and their keepers.' }]);

describe('authorisation matrix: every route × every caller', () => {
  let t: TestApp;
  let ownerRead: string;
  let ownerWrite: string;
  let ownerScopedAll: string;
  let ownerRevoked: string;
  let strangerWrite: string;
  let throwawayKeyId: string;
  let ownerId: string;
  const rows: Row[] = [];

  before(async () => {
    // Every row sends a wrong and a revoked key: more failures than the default per-address limit.
    t = await startTestApp({ model: 'fake', env: { DOCKER_HOST: 'unix:///nonexistent/docker.sock', VSS_MAX_AUTH_FAILURES_PER_MINUTE: '100000' } });
    const owner = await t.deps.storage.createUser({ name: 'Owner', email: 'owner@example.com' });
    const stranger = await t.deps.storage.createUser({ name: 'Stranger', email: 'stranger@example.com' });
    ownerId = owner.id;
    ownerWrite = await t.makeKey('Write', ['*'], owner.id);
    ownerRead = await t.makeKey('Read', ['*'], owner.id);
    ownerScopedAll = await t.makeKey('All', [KS], owner.id);
    ownerRevoked = await t.makeKey('Write', ['*'], owner.id);
    strangerWrite = await t.makeKey('Write', ['*'], stranger.id);
    await t.deps.storage.revokeApiKey((await t.deps.storage.findApiKeyByHash(hashKey(ownerRevoked)))!.id);
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: KS }, ownerWrite)).statusCode, 200);
    assert.equal((await t.call('POST', '/v1/vector/write', { keyspace: KS, table: 'vector', key: 'k1', text: 'hello' }, ownerWrite)).statusCode, 200);
    const up = upload();
    assert.equal((await t.app.inject({ method: 'POST', url: '/v1/embed/', headers: { ...up.headers, 'x-api-key': ownerWrite }, payload: up.payload })).statusCode, 200);
    // The owner's, within the scoped key's keyspace: every kind of the owner's keys may manage it.
    throwawayKeyId = (await t.call('POST', '/v1/keys/generate', { name: 'throwaway', permissions: 'Read', resources: [KS] }, ownerRead)).json().key_id;
    const reupload = async () => {
      const form = upload();
      await t.app.inject({ method: 'POST', url: '/v1/embed/', headers: { ...form.headers, 'x-api-key': ownerWrite }, payload: form.payload });
    };

    const snapshotName = (await t.call('POST', '/v1/snapshots')).json().name;
    const vec = Array.from({ length: 384 }, (_, i) => (i === 0 ? 1 : 0));
    rows.push(
      { method: 'GET', url: '/v1', route: 'GET /v1', need: 'public', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/healthcheck/', route: 'GET /v1/healthcheck/', need: 'public', scoped: false, ok: 200 },
      { method: 'GET', url: '/metrics', route: 'GET /metrics', need: 'Admin', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/stripe/webhook/checkout', route: 'POST /v1/stripe/webhook/checkout', body: {}, need: 'public', scoped: false, ok: 503 },
      { method: 'GET', url: '/v1/env/', route: 'GET /v1/env/', need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/system/info', route: 'GET /v1/system/info', need: 'Admin', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/docker/', route: 'GET /v1/docker/', need: 'Admin', scoped: false, ok: 503 },
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
      // Unnamed: only a key over `*` makes a name it did not choose.
      { method: 'POST', url: '/v1/keyspaces/create', route: 'POST /v1/keyspaces/create', body: {}, need: 'Write', scoped: false, ok: 200, scopedOk: 403 },
      { method: 'POST', url: '/v1/keyspaces/autoprovision', route: 'POST /v1/keyspaces/autoprovision', need: 'Write', scoped: false, ok: 200, scopedOk: 403 },
      { method: 'POST', url: '/v1/keyspaces/list', route: 'POST /v1/keyspaces/list', need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/keyspaces/list', route: 'GET /v1/keyspaces/list', need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keyspaces/table/create', route: 'POST /v1/keyspaces/table/create', bodyFor: (kind) => ({ keyspace: KS, table: `extra_${KINDS.indexOf(kind)}`, dimension: 4 }), need: 'Write', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/keyspaces/table/update', route: 'POST /v1/keyspaces/table/update', body: { keyspace: KS, table: 'vector', default_ttl_seconds: null }, need: 'Write', scoped: true, ok: 200 },
      { method: 'GET', url: '/v1/generate/?text=hi', route: 'GET /v1/generate/', need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/embeddings', route: 'POST /v1/embeddings', body: { input: 'hi' }, need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/embed/', route: 'POST /v1/embed/', multipart: true, need: 'Write', scoped: true, ok: 200 },
      { method: 'GET', url: '/v1/files/', route: 'GET /v1/files/', need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: `/v1/files/${KS}/vector/doc.txt`, route: 'GET /v1/files/{keyspace}/{table}/{*}', need: 'Read', scoped: true, ok: 200 },
      { method: 'POST', url: '/v1/user/', route: 'POST /v1/user/', body: { name: 'New', email: 'new@example.com' }, need: 'Admin', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/user/', route: 'GET /v1/user/', need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/users/', route: 'GET /v1/users/', need: 'Admin', scoped: false, ok: 200 },
      { method: 'GET', url: `/v1/user/${ownerId}`, route: 'GET /v1/user/{account_id}', need: 'Admin', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/connection/', route: 'POST /v1/connection/', body: { type: 'github', id: 'x' }, need: 'Write', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keys/generate', route: 'POST /v1/keys/generate', body: { permissions: 'Read' }, need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/keys/retrieve', route: 'GET /v1/keys/retrieve', need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keys/rotate', route: 'POST /v1/keys/rotate', body: { key_id: throwawayKeyId }, need: 'Read', scoped: false, ok: 200 },
      { method: 'POST', url: '/v1/keys/revoke', route: 'POST /v1/keys/revoke', body: { key_id: throwawayKeyId }, need: 'Read', scoped: false, ok: 200 },
      { method: 'GET', url: `/v1/export?keyspace=${KS}`, route: 'GET /v1/export', need: 'Read', scoped: true, ok: 200 },
      {
        method: 'POST',
        url: '/v1/import',
        route: 'POST /v1/import',
        body: { keyspace: KS, items: [{ type: 'metadata', table: 'vector', source_file: 'imported.txt', raw_value: 'r', source_type: 'txt', processing_details: '' }] },
        need: 'Write',
        scoped: true,
        ok: 200,
      },
      { method: 'POST', url: '/v1/snapshots', route: 'POST /v1/snapshots', need: 'Admin', scoped: false, ok: 200 },
      { method: 'GET', url: '/v1/snapshots', route: 'GET /v1/snapshots', need: 'Admin', scoped: false, ok: 200 },
      { method: 'GET', url: `/v1/snapshots/${snapshotName}`, route: 'GET /v1/snapshots/{name}', need: 'Admin', scoped: false, ok: 200 },
      { method: 'DELETE', url: `/v1/snapshots/${snapshotName}`, route: 'DELETE /v1/snapshots/{name}', need: 'Admin', scoped: false, ok: 200 },
      // Destructive: last.
      { method: 'DELETE', url: `/v1/files/${KS}/vector/doc.txt`, route: 'DELETE /v1/files/{keyspace}/{table}/{*}', need: 'Write', scoped: true, ok: 200, prepare: reupload },
    );
  });
  after(() => t.close());

  const send = (row: Row, key: string | null, kind?: Kind) => {
    const headers: Record<string, string> = key === null ? {} : { 'x-api-key': key };
    if (row.multipart) {
      const form = upload();
      return t.app.inject({ method: row.method, url: row.url, headers: { ...headers, ...form.headers }, payload: form.payload });
    }
    const body = kind !== undefined && row.bodyFor ? row.bodyFor(kind) : (row.bodyFor?.('All *') ?? row.body);
    return t.app.inject({ method: row.method, url: row.url, headers, ...(body === undefined ? {} : { payload: body as object }) });
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
      if (row.scoped) expect(row, "another user's key", (await send(row, strangerWrite)).statusCode, row.need === 'Admin' ? 403 : 404);
      const keys: Record<Kind, string> = { Read: ownerRead, Write: ownerWrite, 'All scoped': ownerScopedAll, 'All *': ADMIN_KEY };
      for (const kind of KINDS) {
        const want = !allows(row.need, kind) ? 403 : kind === 'All scoped' && row.scopedOk !== undefined ? row.scopedOk : row.ok;
        if (want === row.ok) await row.prepare?.();
        expect(row, `the ${kind} key`, (await send(row, keys[kind], kind)).statusCode, want);
      }
    }
    assert.deepEqual(failures, []);
  });

  it('is the table of docs/API.md: each keyed route in one row, yes or no for each kind of key as the route allows', () => {
    const api = readFileSync(new URL('../../docs/API.md', import.meta.url), 'utf8');
    const table = api.slice(api.indexOf('| route | Read | Write | All, scoped | All, `*` |'));
    const lines = table.split('\n').map((l) => l.trim());
    const docRows = lines.slice(2, lines.findIndex((l) => !l.startsWith('|')));
    const cellsOf = (l: string) => l.split(' | ').map((c) => c.replace(/^\| |\s*\|$/g, '').trim());
    const problems: string[] = [];
    for (const row of rows) {
      const need = row.need;
      if (need === 'public') continue;
      const route = row.route.replace('{*}', '{name}');
      const found = docRows.filter((l) => (cellsOf(l)[0].match(/`[^`]+`/g) ?? ([] as string[])).includes(`\`${route}\``));
      if (found.length !== 1) {
        problems.push(`${route}: in ${found.length} rows of the table`);
        continue;
      }
      const cells = cellsOf(found[0]).slice(1);
      KINDS.forEach((kind, i) => {
        const word = /^(yes|no)\b/.exec(cells[i] ?? '')?.[1];
        if (word !== (allows(need, kind) ? 'yes' : 'no')) problems.push(`${route} for ${kind}: the table says "${cells[i]}"`);
      });
    }
    assert.deepEqual(problems, []);
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
