/**
 * The reranker client against a small fake `/rerank` endpoint on 127.0.0.1, which answers as each
 * test needs (scores by shared words, hangs, fails, talks nonsense) and records what it was sent.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Config } from '../config/config.ts';
import { createReranker, RerankFailed, rerankUrl, type Reranker } from './rerank.ts';

const KEY = 'rk-test-secret-0123456789';

interface Seen {
  path: string;
  authorization: string | undefined;
  body: { model?: string; query: string; documents: string[]; top_n: number };
}
type Reply = { status?: number; raw?: string; json?: unknown } | 'hang';

let server: http.Server;
let base: string;
let seen: Seen[] = [];
let route: (s: Seen) => Reply | Promise<Reply>;
const hanging: http.ServerResponse[] = [];

/** A cross-encoder stand-in: a document's score is the share of the query's words it holds. */
function byWords(s: Seen): Reply {
  const wordsOf = (t: string) => t.toLowerCase().split(/\W+/).filter(Boolean);
  const words = wordsOf(s.body.query);
  const results = s.body.documents
    .map((d, index) => ({ index, relevance_score: words.filter((w) => wordsOf(d).includes(w)).length / words.length }))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
    .slice(0, s.body.top_n);
  return { json: { id: 'r1', results, meta: { billed_units: { search_units: 1 } } } };
}

before(async () => {
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', async () => {
      const s: Seen = { path: req.url!, authorization: req.headers.authorization, body: JSON.parse(raw) };
      seen.push(s);
      const reply = await route(s);
      if (reply === 'hang') {
        hanging.push(res);
        return;
      }
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' }).end(reply.raw ?? JSON.stringify(reply.json ?? {}));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function reranker(over: Partial<Config['rerank']> = {}, log?: (msg: string, err?: unknown) => void): Reranker {
  seen = [];
  route = byWords;
  const r = createReranker({ url: `${base}/v1`, model: 'rerank-test', apiKey: KEY, timeoutMs: 2000, maxConcurrent: 4, ...over }, log);
  assert.ok(r);
  return r;
}

const DOCS = ['the cat sat on the mat', 'dogs bark at night', 'a cat and a dog at night', 'stock markets fell'];

describe('createReranker', () => {
  it('is null without a URL', () => {
    assert.equal(createReranker({ url: undefined, model: 'm', apiKey: KEY, timeoutMs: 1000, maxConcurrent: 1 }), null);
  });

  it('appends /rerank to a base URL and keeps a full one', () => {
    assert.equal(rerankUrl('http://127.0.0.1:8000/v1'), 'http://127.0.0.1:8000/v1/rerank');
    assert.equal(rerankUrl('http://127.0.0.1:8000/v1/'), 'http://127.0.0.1:8000/v1/rerank');
    assert.equal(rerankUrl('https://api.jina.ai/v1/rerank'), 'https://api.jina.ai/v1/rerank');
    assert.equal(rerankUrl('http://127.0.0.1:8000'), 'http://127.0.0.1:8000/rerank');
  });
});

describe('reranker', () => {
  it("returns the endpoint's order, top_n of them, having sent the query, documents, model and key", async () => {
    const r = reranker();
    const results = await r.rerank('cat at night', DOCS, 2);
    // "a cat and a dog at night" holds all three words, "dogs bark at night" two, "the cat sat on the mat" one.
    assert.deepEqual(results.map((x) => x.index), [2, 1]);
    assert.equal(results[0]!.relevanceScore, 1);
    assert.equal(seen.length, 1);
    assert.deepEqual(seen[0], { path: '/v1/rerank', authorization: `Bearer ${KEY}`, body: { model: 'rerank-test', query: 'cat at night', documents: DOCS, top_n: 2 } });
  });

  it('sends no model and no authorization when none is set, and asks for at most as many as it sends', async () => {
    const r = reranker({ model: undefined, apiKey: undefined });
    assert.deepEqual((await r.rerank('markets', DOCS, 10)).map((x) => x.index).slice(0, 1), [3]);
    assert.equal(seen[0]!.authorization, undefined);
    assert.equal('model' in seen[0]!.body, false);
    assert.equal(seen[0]!.body.top_n, DOCS.length);
  });

  it('sorts an answer listed out of order and keeps top_n of a longer one', async () => {
    const r = reranker();
    route = () => ({ json: { results: [{ index: 0, relevance_score: 0.1 }, { index: 3, relevance_score: 0.9 }, { index: 1, relevance_score: 0.5 }] } });
    assert.deepEqual(await r.rerank('q', DOCS, 2), [{ index: 3, relevanceScore: 0.9 }, { index: 1, relevanceScore: 0.5 }]);
  });

  it('asks nothing for no documents', async () => {
    const r = reranker();
    assert.deepEqual(await r.rerank('q', [], 5), []);
    assert.equal(seen.length, 0);
  });

  it('fails in time when the endpoint does not answer', async () => {
    const logs: string[] = [];
    const r = reranker({ timeoutMs: 200 }, (m) => logs.push(m));
    route = () => 'hang';
    const started = Date.now();
    await assert.rejects(r.rerank('q', DOCS, 2), (e: unknown) => e instanceof RerankFailed && /did not answer within 200 ms/.test(e.message));
    assert.ok(Date.now() - started < 1500, 'gives up well before a second');
    assert.match(logs.join('\n'), /reranking failed: the reranker did not answer within 200 ms/);
  });

  for (const [what, reply, reason] of [
    ['a 500', { status: 500, json: { message: 'model crashed' } }, /answered HTTP 500/],
    ['a body that is not JSON', { raw: '<html>bad gateway</html>' }, /not JSON/],
    ['no results list', { json: { data: [] } }, /without a results list/],
    ['an index out of range', { json: { results: [{ index: 4, relevance_score: 0.3 }] } }, /results\[0\]\.index/],
    ['a fractional index', { json: { results: [{ index: 0.5, relevance_score: 0.3 }] } }, /results\[0\]\.index/],
    ['an index twice', { json: { results: [{ index: 1, relevance_score: 0.3 }, { index: 1, relevance_score: 0.2 }] } }, /results\[1\]\.index/],
    ['a score that is not a number', { json: { results: [{ index: 1, relevance_score: '0.3' }] } }, /results\[0\]\.relevance_score/],
    ['a missing score', { json: { results: [{ index: 1 }] } }, /results\[0\]\.relevance_score/],
    ['a null result', { json: { results: [null] } }, /results\[0\]\.index/],
  ] as const) {
    it(`fails on ${what}, without the key in the message or the log`, async () => {
      const logs: string[] = [];
      const r = reranker({}, (m, err) => logs.push(`${m} ${String(err)} ${JSON.stringify(err)}`));
      route = () => reply;
      await assert.rejects(r.rerank('q', DOCS, 2), (e: unknown) => e instanceof RerankFailed && reason.test(e.message) && !e.message.includes(KEY));
      assert.equal(logs.length, 1);
      assert.ok(!logs[0]!.includes(KEY));
    });
  }

  it('fails on an endpoint that cannot be reached', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const r = createReranker({ url: `http://127.0.0.1:${port}/v1`, model: undefined, apiKey: KEY, timeoutMs: 2000, maxConcurrent: 1 })!;
    await assert.rejects(r.rerank('q', DOCS, 2), /could not be reached/);
  });

  it('has at most maxConcurrent calls with the endpoint; one more fails at once, and a slot freed serves again', async () => {
    const logs: string[] = [];
    const r = reranker({ maxConcurrent: 2 }, (m) => logs.push(m));
    route = () => 'hang';
    const held = [r.rerank('a', DOCS, 1), r.rerank('b', DOCS, 1)];
    while (seen.length < 2) await new Promise((res) => setTimeout(res, 10));
    await assert.rejects(r.rerank('c', DOCS, 1), (e: unknown) => e instanceof RerankFailed && /busy \(2 searches/.test(e.message));
    assert.equal(seen.length, 2, 'the third call never reached the endpoint');
    assert.deepEqual(logs, [], 'being busy is not logged as a failure');
    // Answer the two held calls; their slots come back.
    route = byWords;
    for (const res of hanging.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: [{ index: 0, relevance_score: 1 }] }));
    assert.deepEqual((await Promise.all(held)).map((x) => x[0]!.index), [0, 0]);
    assert.deepEqual((await r.rerank('stock markets', DOCS, 1)).map((x) => x.index), [3]);
  });
});
