/** Retries against a tiny local server that refuses as told: 429/503 with and without Retry-After. */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { VssClient, VssError } from './index.ts';
import { parseRetryAfter, retryDelay } from './retry.ts';

interface Refusal {
  status: number;
  retryAfter?: string;
  code: string;
}

describe('retries of 429 and 503', () => {
  let server: http.Server;
  let url: string;
  /** Answers still to give before a 200, and when each request arrived. */
  let refusals: Refusal[] = [];
  let arrivals: number[] = [];

  before(async () => {
    server = http.createServer((req, res) => {
      arrivals.push(performance.now());
      req.resume();
      const next = refusals.shift();
      if (next) {
        const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
        if (next.retryAfter !== undefined) headers['retry-after'] = next.retryAfter;
        res.writeHead(next.status, headers).end(JSON.stringify({ status: next.status, code: next.code, detail: `refused: ${next.code}` }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok', checks: { storage: 'ok', model: 'ok' } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    refusals = [];
    arrivals = [];
  });

  it('waits the Retry-After seconds of a 429, then succeeds', async () => {
    refusals = [{ status: 429, retryAfter: '1', code: 'rate_limited' }];
    const client = new VssClient({ url, retry: { baseDelayMs: 1 } });
    assert.equal((await client.health()).status, 'ok');
    assert.equal(arrivals.length, 2);
    assert.ok(arrivals[1] - arrivals[0] >= 990, `retried after ${arrivals[1] - arrivals[0]} ms`);
  });

  it('honours Retry-After as an HTTP date on a 503', async () => {
    refusals = [{ status: 503, retryAfter: new Date(Date.now() + 2000).toUTCString(), code: 'not_ready' }];
    const client = new VssClient({ url, retry: { baseDelayMs: 1 } });
    assert.equal((await client.health()).status, 'ok');
    // The date has a one-second resolution: at least one second passed, never a bare back-off.
    assert.ok(arrivals[1] - arrivals[0] >= 900, `retried after ${arrivals[1] - arrivals[0]} ms`);
  });

  it('backs off without Retry-After, then gives up with the last problem', async () => {
    refusals = [
      { status: 503, code: 'storage_unavailable' },
      { status: 503, code: 'storage_unavailable' },
      { status: 503, code: 'storage_unavailable' },
    ];
    const client = new VssClient({ url, retry: { retries: 2, baseDelayMs: 100 } });
    const error = await client.health().then(() => assert.fail('should fail'), (e: unknown) => e);
    assert.ok(error instanceof VssError);
    assert.deepEqual([error.status, error.code], [503, 'storage_unavailable']);
    assert.equal(arrivals.length, 3);
    // Full jitter over half to all of 100 ms, then of 200 ms.
    assert.ok(arrivals[1] - arrivals[0] >= 45, `first wait ${arrivals[1] - arrivals[0]} ms`);
    assert.ok(arrivals[2] - arrivals[1] >= 95, `second wait ${arrivals[2] - arrivals[1]} ms`);
  });

  it('fails at once when Retry-After asks for longer than the policy allows', async () => {
    refusals = [{ status: 429, retryAfter: '3600', code: 'rate_limited' }];
    const client = new VssClient({ url, retry: { maxDelayMs: 5000 } });
    const error = await client.health().then(() => assert.fail('should fail'), (e: unknown) => e);
    assert.ok(error instanceof VssError && error.code === 'rate_limited');
    assert.equal(arrivals.length, 1);
  });

  it('does not retry other errors', async () => {
    refusals = [{ status: 500, code: 'internal' }];
    const error = await new VssClient({ url, retry: { baseDelayMs: 1 } }).health().then(() => assert.fail('should fail'), (e: unknown) => e);
    assert.ok(error instanceof VssError && error.code === 'internal' && error.status === 500);
    assert.equal(arrivals.length, 1);
  });

  it('retries an upload with its whole body', async () => {
    let bodies: string[] = [];
    const echo = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        bodies.push(body);
        if (bodies.length === 1) return res.writeHead(429, { 'retry-after': '0' }).end('{"code":"rate_limited"}');
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"files":[],"file":{}}');
      });
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    try {
      const client = new VssClient({ url: `http://127.0.0.1:${(echo.address() as AddressInfo).port}` });
      await client.upload(new Blob(['hello upload']).stream(), { name: 'a.txt', keyspace: 'k' });
      assert.equal(bodies.length, 2);
      // Each attempt has its own multipart boundary; the parts are the same.
      const parts = (b: string) => b.replace(/-+formdata-undici-\d+/g, '--boundary');
      assert.equal(parts(bodies[1]), parts(bodies[0]));
      assert.match(bodies[1], /name="keyspace"\r\n\r\nk\r\n[\s\S]*filename="a.txt"[\s\S]*hello upload/);
    } finally {
      bodies = [];
      await new Promise<void>((resolve) => echo.close(() => resolve()));
    }
  });
});

describe('Retry-After parsing', () => {
  it('reads seconds and dates, and ignores what it cannot read', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('5', now), 5000);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
    assert.equal(parseRetryAfter('soon', now), null);
    assert.equal(parseRetryAfter(null, now), null);
  });

  it('uses the exponential back-off only without Retry-After', () => {
    const policy = { retries: 5, baseDelayMs: 100, maxDelayMs: 10_000 };
    assert.equal(retryDelay(null, 3, policy, () => 1), 800);
    assert.equal(retryDelay(null, 3, policy, () => 0), 400);
    assert.equal(retryDelay('2', 3, policy), 2000);
    assert.equal(retryDelay('20', 0, policy), null);
  });
});
