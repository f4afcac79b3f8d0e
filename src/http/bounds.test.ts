import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MAX_FIELD_ERRORS } from '../errors.ts';
import { MAX_PROBLEM_BYTES } from './problem.ts';
import { ADMIN_KEY, startTestApp, type TestApp } from './testing.ts';

/** A test app listening on a free loopback port. */
async function listening(): Promise<{ t: TestApp; port: number }> {
  const t = await startTestApp({ model: 'fake' });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  return { t, port: (t.app.server.address() as AddressInfo).port };
}

// Hostile bodies over a real socket: every answer is a bounded problem, and the process keeps
// answering meanwhile. The fake embedder: nothing here is about meaning.
describe('bounded error answers', () => {
  let t: TestApp;
  let base: string;
  before(async () => {
    const l = await listening();
    t = l.t;
    base = `http://127.0.0.1:${l.port}`;
  });
  after(() => t.close());

  /**
   * Sends `body` (JSON text) to `path` and, once it is on its way, a healthcheck; asserts the
   * healthcheck answered within a second and returns the hostile request's status, type and body.
   */
  async function hostile(path: string, body: string): Promise<{ status: number; type: string; text: string }> {
    const sent = fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': ADMIN_KEY }, body });
    const started = performance.now();
    const health = await fetch(`${base}/v1/healthcheck/`);
    const healthMs = performance.now() - started;
    assert.equal(health.status, 200);
    assert.ok(healthMs < 1000, `the healthcheck took ${healthMs.toFixed(0)} ms`);
    const res = await sent;
    return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
  }

  /** A 400 problem body of at most 64 KiB naming at most ~100 fields, which says it stopped. */
  function assertBounded(res: { status: number; type: string; text: string }, firstPath: string): Record<string, unknown> {
    assert.equal(res.status, 400, res.text.slice(0, 300));
    assert.match(res.type, /^application\/problem\+json/);
    assert.ok(Buffer.byteLength(res.text) <= MAX_PROBLEM_BYTES, `${Buffer.byteLength(res.text)} bytes`);
    const p = JSON.parse(res.text);
    assert.equal(p.code, 'validation_failed');
    assert.ok(Array.isArray(p.errors) && p.errors.length >= 1 && p.errors.length <= MAX_FIELD_ERRORS, `${p.errors?.length} errors`);
    assert.equal(p.errors_truncated, true);
    assert.ok(p.errors.some((e: { path: string }) => e.path === firstPath), JSON.stringify(p.errors.slice(0, 5)));
    assert.ok(p.detail.length < 8192);
    return p;
  }

  it('answers a search whose vector holds 700,000 strings with one bounded problem', async () => {
    const body = JSON.stringify({ keyspace: 'default_keyspace', table: 'vector', vector: Array.from({ length: 700_000 }, () => 'xyz') });
    assert.ok(body.length > 4e6);
    const p = assertBounded(await hostile('/v1/search/', body), '/body/vector');
    assert.match(JSON.stringify(p.errors), /must NOT have more than 4096 items/);
  });

  it('names at most 100 bad items of a 1,000-item batch of 4,096 strings each, and refuses a batch of 30,000 bad items', async () => {
    const bad = Array.from({ length: 4096 }, () => 'x');
    const full = JSON.stringify({ keyspace: 'default_keyspace', table: 'vector', vectors: Array.from({ length: 1000 }, () => ({ vector: bad })) });
    assert.ok(full.length > 16e6);
    const p = assertBounded(await hostile('/v1/vector/batch', full), '/body/vectors/0/vector/0');
    assert.equal(p.errors && (p.errors as unknown[]).length, MAX_FIELD_ERRORS);

    const many = JSON.stringify({ keyspace: 'default_keyspace', table: 'vector', vectors: Array.from({ length: 30_000 }, (_, i) => ({ key: i, vector: 'x' })) });
    assertBounded(await hostile('/v1/vector/batch', many), '/body/vectors');
  });

  it('stops checking a filter of 100,000 bad conditions after about 100 problems', async () => {
    // One field name throughout: JSON.parse of 100,000 objects with distinct keys alone takes
    // 0.3-0.5 s on these loaded VMs (a hidden class each), which says nothing about the answer.
    const conditions = Array.from({ length: 100_000 }, (_, i) => ({ f: { $bad: i } }));
    for (const path of ['/v1/vector/count', '/v1/search/']) {
      const body = JSON.stringify({ keyspace: 'default_keyspace', table: 'vector', ...(path === '/v1/search/' ? { query: 'a' } : {}), filter: { $or: conditions } });
      const p = assertBounded(await hostile(path, body), '/body/filter/$or/0/f/$bad');
      assert.ok((p.errors as unknown[]).length > 50);
    }
    // The same conditions side by side: the schema's maxProperties refuses them before any walk.
    const wide = JSON.stringify({ keyspace: 'default_keyspace', table: 'vector', filter: Object.fromEntries(conditions.map((c, i) => [`f${i}`, c.f])) });
    assertBounded(await hostile('/v1/vector/count', wide), '/body/filter');
  });

  it('answers a body just under the 32 MiB limit full of bad items with a bounded problem', async () => {
    const limit = t.deps.config.limits.bodyBytes;
    // Bare vectors of strings, as many as fit under the limit. Strings of 16 characters: JSON.parse
    // alone of 8 million two-character strings takes 1.1-1.8 s on these loaded 2-core VMs, which
    // says nothing about the answer; 1.7 million values parse in a few hundred milliseconds.
    const row = JSON.stringify(Array.from({ length: 4096 }, () => 'not a number....'));
    const head = '{"keyspace":"default_keyspace","table":"vector","vector":[';
    const rows = Math.floor((limit - head.length - 2) / (row.length + 1));
    const body = `${head}${Array.from({ length: rows }, () => row).join(',')}]}`;
    assert.ok(body.length <= limit && body.length > limit - row.length - 64, `${body.length} bytes`);
    // Under the 1,000-row limit (431 rows of 4,096 values): refused for its values, the first named first.
    assertBounded(await hostile('/v1/vector/batch', body), '/body/vector/0/0');
  });

  it('clips field errors whose paths are long and keeps the answer within 64 KiB', async () => {
    // additionalProperties names each unknown member in its path: 200 members of 50,000 characters.
    const fields = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`${i}${'k'.repeat(50_000)}`, 1]));
    const body = JSON.stringify({ keyspace: 'default_keyspace', table: 'vector', key: 'a', ...fields });
    // The first unknown member's path, clipped to 512 characters.
    const p = assertBounded(await hostile('/v1/vector/get', body), `/body/0${'k'.repeat(50_000)}`.slice(0, 511) + '…');
    for (const e of p.errors as { path: string; message: string }[]) assert.ok(e.path.length <= 512 && e.message.length <= 512);
  });
});

// Invalid UTF-8, bad percent-encoding and overlong segments in a path or a query string are the client's fault.
describe('unreadable URLs', () => {
  let t: TestApp;
  let port: number;
  before(async () => ({ t, port } = await listening()));
  after(() => t.close());

  // Overlong "/", a lone continuation byte, an encoded UTF-16 surrogate, a truncated sequence, 0xFF, a lone %.
  const BAD = ['%C0%AF', '%80', '%ED%A0%80', '%E2%82', '%FF', '%', '%Zz'];
  const urls = [
    ...BAD.map((b) => `/v1/user/${b}`),
    ...BAD.map((b) => `/v1/files/default_keyspace/vector/a${b}.txt`),
    ...BAD.map((b) => `/v1/generate/?text=a${b}`),
    ...BAD.map((b) => `/v1/keys/retrieve?user_id=${b}`),
    ...BAD.map((b) => `/v1/files/?keyspace=default_keyspace&t${b}=1`),
    // Longer than the router takes a path parameter (was a 500).
    `/v1/user/${'x'.repeat(3000)}`,
    `/v1/files/${'k'.repeat(300)}/vector/a.txt`,
  ];

  /** A 400 validation_failed problem naming the URL or the query string. */
  function assertUnreadable(status: number, type: string, text: string, url: string): void {
    assert.equal(status, 400, `${url}: ${text.slice(0, 200)}`);
    assert.match(type, /^application\/problem\+json/, url);
    const p = JSON.parse(text);
    assert.equal(p.code, 'validation_failed', url);
    assert.ok(['/url', '/querystring'].includes(p.errors[0].path), `${url}: ${text.slice(0, 200)}`);
  }

  it('answers 400 with a problem body through app.inject', async () => {
    for (const url of urls) {
      const res = await t.call('GET', url);
      assertUnreadable(res.statusCode, String(res.headers['content-type']), res.body, url);
    }
  });

  it('answers 400 with a problem body over a real socket', async () => {
    for (const url of urls) {
      // fetch would normalise the URL; the request line is written as it stands.
      const raw = await new Promise<string>((resolve, reject) => {
        const s = connect(port, '127.0.0.1');
        let out = '';
        s.on('data', (d) => (out += d.toString('utf8')));
        s.on('end', () => resolve(out));
        s.on('error', reject);
        s.end(`GET ${url} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: ${ADMIN_KEY}\r\nconnection: close\r\n\r\n`);
      });
      const [head, body] = [raw.slice(0, raw.indexOf('\r\n\r\n')), raw.slice(raw.indexOf('\r\n\r\n') + 4)];
      const status = Number(head.split(' ')[1]);
      const type = /content-type: ([^\r\n]+)/i.exec(head)?.[1] ?? '';
      // Keep-alive is off, so the body is whole; chunked framing is not used for these answers.
      assertUnreadable(status, type, body, url);
    }
  });

  it('still reads well-formed percent-encoding in queries and paths', async () => {
    const res = await t.call('GET', '/v1/generate/?text=caf%C3%A9+%E2%82%AC%2B1');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await t.call('GET', '/v1/user/%C3%A9t%C3%A9')).json().code, 'user_not_found');
  });
});
