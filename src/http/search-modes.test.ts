/**
 * POST /v1/search/ modes through app.inject: lexical and hybrid next to semantic, fusion,
 * MMR, rerank (against a fake reranker on 127.0.0.1), and what user text can and cannot do.
 * Quality claims use the real model; arithmetic and plumbing use vectors given directly.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from './testing.ts';

const KS = 'default_keyspace';
type Match = { key: string; score: number; scores?: { semantic: number | null; lexical: number | null; rerank?: number }; metadata: Record<string, unknown> };

const cosine = (a: number[], b: number[]): number => {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) (d += Math.fround(a[i]) * Math.fround(b[i])), (na += Math.fround(a[i]) ** 2), (nb += Math.fround(b[i]) ** 2);
  return d / Math.sqrt(na * nb);
};

function paths(res: { json(): unknown }): string[] {
  return ((res.json() as { errors?: { path: string }[] }).errors ?? []).map((e) => e.path);
}

describe('search modes: an exact identifier (real model)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ model: 'real' });
    const passages = [
      'Error codes tell you what went wrong; look the code up in the table of error codes in the manual.',
      'When the device shows an error code, write it down and restart the device before calling support.',
      'Most error messages disappear after a firmware update; check for updates first.',
      'An error code that keeps coming back usually means a part must be replaced.',
      'The pressure sensor reads out of range and the pump stops: code QX-7731.',
      'Support can tell from the error code which part failed and send a replacement.',
      'The display shows codes for warnings and for errors; warnings need no action.',
      'Cleaning the filter monthly prevents most errors of the water circuit.',
    ];
    await t.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: 'codes' });
    const res = await t.call('POST', '/v1/vector/batch', { keyspace: KS, table: 'codes', vectors: passages.map((text, i) => ({ key: `p${i}`, text })) });
    assert.equal(res.statusCode, 200, res.body);
  });
  after(() => t.close());

  it('semantic misses the passage with the code; lexical and hybrid rank it first', async () => {
    const ask = (mode: string) => t.call('POST', '/v1/search/', { keyspace: KS, table: 'codes', query: 'what does error code QX-7731 mean', mode, final_top_k: 3 });
    const semantic = (await ask('semantic')).json().matches as Match[];
    assert.notEqual(semantic[0].key, 'p4', JSON.stringify(semantic.map((m) => m.key)));
    for (const mode of ['lexical', 'hybrid']) {
      const res = await ask(mode);
      assert.equal(res.statusCode, 200, res.body);
      const m = res.json().matches as Match[];
      assert.equal(m[0].key, 'p4', `${mode}: ${JSON.stringify(m.map((x) => x.key))}`);
      assert.equal(res.json().mode, mode);
      assert.ok(m[0].scores!.lexical! > 0);
      if (mode === 'hybrid') assert.ok(typeof m[0].scores!.semantic === 'number');
      else assert.equal(m[0].scores!.semantic, null);
    }
  });
});

describe('search modes: plumbing (vectors given, fake embedder: no meaning checked)', () => {
  let t: TestApp;
  let reranker: http.Server;
  let rerankCalls: { query: string; documents: string[]; top_n: number }[] = [];
  let rerankDelayMs = 0;
  let rt: TestApp;
  const rows = [
    { key: 'a', vector: [1, 0, 0, 0], text: 'apple banana', metadata: { g: 1 } },
    { key: 'b', vector: [0.9, 0.1, 0, 0], text: 'banana cherry cherry', metadata: { g: 2 } },
    { key: 'c', vector: [0.5, 0.5, 0, 0], text: 'cherry', metadata: { g: 1 } },
    { key: 'd', vector: [0, 1, 0, 0], text: 'durian banana apple apple', metadata: { g: 2 } },
    { key: 'e', vector: [0, 0, 1, 0], text: null, metadata: { g: 1 } },
  ];
  const q = [1, 0.2, 0, 0];
  const semanticOrder = rows.map((r) => ({ key: r.key, s: cosine(q, r.vector) })).sort((x, y) => y.s - x.s).map((x) => x.key);

  before(async () => {
    t = await startTestApp({ model: 'fake', fakeDimension: 4 });
    await t.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: 'm', dimension: 4 });
    const res = await t.call('POST', '/v1/vector/batch', { keyspace: KS, table: 'm', vectors: rows.map((r) => (r.text === null ? { key: r.key, vector: r.vector, metadata: r.metadata } : r)) });
    assert.equal(res.statusCode, 200, res.body);
    // A reranker that ranks by text length, longest first, after rerankDelayMs.
    reranker = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const j = JSON.parse(body) as { query: string; documents: string[]; top_n: number };
        rerankCalls.push(j);
        const results = j.documents.map((d, index) => ({ index, relevance_score: d.length / 100 })).sort((x, y) => y.relevance_score - x.relevance_score).slice(0, j.top_n);
        setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results })), rerankDelayMs);
      });
    });
    await new Promise<void>((r) => reranker.listen(0, '127.0.0.1', r));
    const port = (reranker.address() as AddressInfo).port;
    rt = await startTestApp({ model: 'fake', fakeDimension: 4, env: { VSS_RERANK_URL: `http://127.0.0.1:${port}/v1`, VSS_RERANK_TIMEOUT_MS: '300' } });
    await rt.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: 'm', dimension: 4 });
    await rt.call('POST', '/v1/vector/batch', { keyspace: KS, table: 'm', vectors: rows.filter((r) => r.text !== null) });
  });
  after(async () => {
    await t.close();
    await rt.close();
    reranker.closeAllConnections();
    await new Promise((r) => reranker.close(r));
  });

  const search = (body: Record<string, unknown>, app = t) => app.call('POST', '/v1/search/', { keyspace: KS, table: 'm', ...body });

  it('semantic stays the default, answering as before: no per-list scores', async () => {
    const plain = await search({ vector: q, final_top_k: 5 });
    const explicit = await search({ vector: q, final_top_k: 5, mode: 'semantic' });
    assert.deepEqual(plain.json().matches, explicit.json().matches);
    const m = plain.json().matches as Match[];
    assert.deepEqual(m.map((x) => x.key), semanticOrder);
    m.forEach((x) => assert.ok(Math.abs(x.score - cosine(q, rows.find((r) => r.key === x.key)!.vector)) < 1e-6));
    assert.equal(m[0].scores, undefined);
    assert.equal(plain.json().mode, 'semantic');
  });

  it('fuses by reciprocal rank exactly: Σ 1/(k + rank) over both lists', async () => {
    const res = await search({ vector: q, query: 'apple cherry', mode: 'hybrid', fusion: { method: 'rrf', k: 10 }, final_top_k: 5 });
    assert.equal(res.statusCode, 200, res.body);
    const m = res.json().matches as Match[];
    // Semantic: every row by cosine; lexical: the rows with apple or cherry, by their BM25.
    const sem = semanticOrder;
    const lexRows = m.filter((x) => x.scores!.lexical !== null).sort((x, y) => y.scores!.lexical! - x.scores!.lexical!);
    assert.deepEqual(lexRows.map((x) => x.key).sort(), ['a', 'b', 'c', 'd']);
    const want = new Map(sem.map((k, i) => [k, 1 / (10 + i + 1)]));
    lexRows.forEach((x, i) => want.set(x.key, want.get(x.key)! + 1 / (10 + i + 1)));
    for (const x of m) assert.ok(Math.abs(x.score - want.get(x.key)!) < 1e-12, `${x.key}: ${x.score} vs ${want.get(x.key)}`);
    assert.deepEqual(m.map((x) => x.key), [...want].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).map(([k]) => k));
    assert.equal(m.find((x) => x.key === 'e')!.scores!.lexical, null);
    for (const x of m) assert.ok(Math.abs(x.scores!.semantic! - cosine(q, rows.find((r) => r.key === x.key)!.vector)) < 1e-6);
    assert.deepEqual(res.json().fusion, { method: 'rrf', k: 10 });
  });

  it('fuses min-max normalised scores with alpha on the semantic side', async () => {
    const alpha = 0.3;
    const res = await search({ vector: q, query: 'banana durian', mode: 'hybrid', fusion: { method: 'relative', alpha }, final_top_k: 5 });
    assert.equal(res.statusCode, 200, res.body);
    const m = res.json().matches as Match[];
    const sem = m.map((x) => x.scores!.semantic!);
    const lex = m.map((x) => x.scores!.lexical).filter((s): s is number => s !== null);
    assert.equal(lex.length, 3);
    const norm = (v: number, xs: number[]) => (v - Math.min(...xs)) / (Math.max(...xs) - Math.min(...xs));
    for (const x of m) {
      const want = alpha * norm(x.scores!.semantic!, sem) + (1 - alpha) * (x.scores!.lexical === null ? 0 : norm(x.scores!.lexical, lex));
      assert.ok(Math.abs(x.score - want) < 1e-9, `${x.key}: ${x.score} vs ${want}`);
    }
    for (let i = 1; i < m.length; i++) assert.ok(m[i - 1].score >= m[i].score);
  });

  it('applies the filter to both lists before fusion', async () => {
    const res = await search({ vector: q, query: 'apple banana cherry', mode: 'hybrid', filter: { g: 2 }, final_top_k: 5 });
    assert.deepEqual((res.json().matches as Match[]).map((x) => x.key).sort(), ['b', 'd']);
    const lex = await search({ query: 'apple banana cherry', mode: 'lexical', filter: { g: 1 }, final_top_k: 5 });
    assert.deepEqual((lex.json().matches as Match[]).map((x) => x.key).sort(), ['a', 'c']);
  });

  it('MMR drops near-duplicates for the next most relevant different row', async () => {
    await t.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: 'dups', dimension: 4 });
    // The query lies between the copies' direction and other1's; other2 is less relevant but unlike both.
    const copies = Array.from({ length: 5 }, (_, i) => ({ key: `copy${i}`, vector: [1, 0.1 + 0.001 * i, 0, 0], text: 'the same paragraph again' }));
    const others = [
      { key: 'other1', vector: [0.09, 1, 0, 0], text: 'a different paragraph' },
      { key: 'other2', vector: [0.5, 0.5, 0.7, 0], text: 'another paragraph' },
      { key: 'far', vector: [0, 0, 0, 1], text: 'unrelated' },
    ];
    await t.call('POST', '/v1/vector/batch', { keyspace: KS, table: 'dups', vectors: [...copies, ...others] });
    const query = { keyspace: KS, table: 'dups', vector: [1, 1, 0, 0], final_top_k: 3 };
    const plain = await t.call('POST', '/v1/search/', query);
    assert.ok((plain.json().matches as Match[]).every((x) => x.key.startsWith('copy')), plain.body);
    const diverse = await t.call('POST', '/v1/search/', { ...query, mmr: { diversity: 0.5, candidates: 8 } });
    assert.equal(diverse.statusCode, 200, diverse.body);
    const keys = (diverse.json().matches as Match[]).map((x) => x.key);
    assert.deepEqual(keys, [(plain.json().matches as Match[])[0].key, 'other1', 'other2']);
    const none = await t.call('POST', '/v1/search/', { ...query, mmr: { diversity: 0, candidates: 8 } });
    assert.deepEqual((none.json().matches as Match[]).map((x) => x.key), (plain.json().matches as Match[]).map((x) => x.key));
    assert.equal((none.json().matches as Match[])[0].metadata.vector, undefined);
  });

  it('reranks the candidates in the reranker\'s order, and degrades to the fused order with a note when it times out', async () => {
    rerankCalls = [];
    const res = await search({ vector: q, query: 'banana', mode: 'hybrid', rerank: true, final_top_k: 2, initial_top_k: 10 }, rt);
    assert.equal(res.statusCode, 200, res.body);
    const m = res.json().matches as Match[];
    assert.deepEqual(m.map((x) => x.key), ['d', 'b']); // the longest texts
    assert.equal(m[0].score, 'durian banana apple apple'.length / 100);
    assert.equal(m[0].scores!.rerank, m[0].score);
    assert.equal(rerankCalls.length, 1);
    assert.equal(rerankCalls[0].query, 'banana');
    assert.equal(rerankCalls[0].top_n, 2);
    assert.equal(rerankCalls[0].documents.length, 4);
    assert.equal(res.json().note, undefined);

    rerankDelayMs = 1500;
    const fused = await search({ vector: q, query: 'banana', mode: 'hybrid', final_top_k: 2, initial_top_k: 10 }, rt);
    const slow = await search({ vector: q, query: 'banana', mode: 'hybrid', rerank: true, final_top_k: 2, initial_top_k: 10 }, rt);
    rerankDelayMs = 0;
    assert.equal(slow.statusCode, 200, slow.body);
    assert.match(slow.json().note, /reranker/);
    assert.deepEqual((slow.json().matches as Match[]).map((x) => x.key), (fused.json().matches as Match[]).map((x) => x.key));
  });

  it('refuses rerank without a reranker, naming /body/rerank', async () => {
    const res = await search({ query: 'banana', mode: 'lexical', rerank: true });
    assert.equal(res.statusCode, 400);
    assert.ok(paths(res).includes('/body/rerank'), res.body);
    assert.match(res.body, /VSS_RERANK_URL/);
  });

  it('names every bad field of mode, fusion and mmr', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ query: 'x', mode: 'fuzzy' }, '/body/mode'],
      [{ vector: q, mode: 'lexical' }, '/body/query'],
      [{ vector: q, query: 'x', mode: 'lexical' }, '/body/vector'],
      [{ vector: q, mode: 'hybrid' }, '/body/query'],
      [{ vector: q, fusion: { method: 'rrf', k: 60 } }, '/body/fusion'],
      [{ query: 'x', mode: 'hybrid', fusion: { method: 'relative', alpha: 2 } }, '/body/fusion/alpha'],
      [{ query: 'x', mode: 'hybrid', fusion: { method: 'rrf', k: -1 } }, '/body/fusion/k'],
      [{ query: 'x', mode: 'hybrid', fusion: { method: 'borda' } }, '/body/fusion/method'],
      [{ vector: q, mmr: { diversity: 1.5 } }, '/body/mmr/diversity'],
      [{ vector: q, final_top_k: 5, mmr: { candidates: 2 } }, '/body/mmr/candidates'],
      [{ vector: q, initial_top_k: 10, mmr: { candidates: 50 } }, '/body/mmr/candidates'],
    ];
    for (const [body, path] of cases) {
      const res = await search(body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
      assert.ok(paths(res).includes(path), `${JSON.stringify(body)} should name ${path}: ${res.body}`);
    }
  });

  it('searches FTS5 syntax, operator words, empty-after-tokenizing and 8 KiB queries literally', async () => {
    for (const query of ['"', '*', '^', ':', '"" * ^ : ( ) - +', '   ', '!!!', '\u2014']) {
      const res = await search({ query, mode: 'lexical' });
      assert.equal(res.statusCode, 200, `${JSON.stringify(query)}: ${res.body}`);
      assert.deepEqual(res.json().matches, []);
      const hybrid = await search({ query, vector: q, mode: 'hybrid', final_top_k: 5 });
      assert.equal(hybrid.statusCode, 200, hybrid.body);
      assert.ok((hybrid.json().matches as Match[]).every((x) => x.scores!.lexical === null));
    }
    for (const query of ['apple AND NOT cherry', 'NEAR(apple durian)', 'text:apple', '"apple', 'apple*', '^apple', 'apple OR']) {
      const res = await search({ query, mode: 'lexical', final_top_k: 5 });
      assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
      assert.ok((res.json().matches as Match[]).some((x) => x.key === 'a'), `${query}: ${res.body}`);
    }
    const long = 'durian '.repeat(1171).slice(0, 8192);
    const res = await search({ query: long, mode: 'lexical' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual((res.json().matches as Match[]).map((x) => x.key), ['d']);
    const tooLong = await search({ query: long + 'x', mode: 'lexical' });
    assert.equal(tooLong.statusCode, 400);
  });

  it('leaves no stale lexical hit after deletes, delete-by-filter and overwrites', async () => {
    await t.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: 'stale', dimension: 4 });
    const write = (vectors: unknown[]) => t.call('POST', '/v1/vector/batch', { keyspace: KS, table: 'stale', vectors });
    await write([
      { key: 's1', vector: [1, 0, 0, 0], text: 'zebra one', metadata: { kind: 'x' } },
      { key: 's2', vector: [0, 1, 0, 0], text: 'zebra two', metadata: { kind: 'y' } },
      { key: 's3', vector: [0, 0, 1, 0], text: 'zebra three', metadata: { kind: 'y' } },
    ]);
    const found = async () => ((await t.call('POST', '/v1/search/', { keyspace: KS, table: 'stale', query: 'zebra', mode: 'lexical', final_top_k: 10 })).json().matches as Match[]).map((x) => x.key).sort();
    assert.deepEqual(await found(), ['s1', 's2', 's3']);
    assert.equal((await t.call('POST', '/v1/vector/delete', { keyspace: KS, table: 'stale', keys: ['s1'] })).statusCode, 200);
    assert.deepEqual(await found(), ['s2', 's3']);
    assert.equal((await t.call('POST', '/v1/vector/delete', { keyspace: KS, table: 'stale', filter: { kind: 'y' } })).statusCode, 200);
    assert.deepEqual(await found(), []);
    await write([{ key: 's4', vector: [1, 0, 0, 0], text: 'zebra four' }]);
    await write([{ key: 's4', vector: [1, 0, 0, 0], text: 'horse four' }]);
    assert.deepEqual(await found(), []);
  });

  it('creates a table with the tokenizer asked for and lists it; refuses an unknown one', async () => {
    const res = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: 'tri', dimension: 4, lexical: { tokenizer: 'trigram' } });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().lexical, { tokenizer: 'trigram' });
    const list = await t.call('GET', '/v1/keyspaces/list');
    const tables = list.json().keyspaces.find((k: { keyspace: string }) => k.keyspace === KS).tables as { table: string; lexical: unknown }[];
    assert.deepEqual(tables.find((x) => x.table === 'tri')!.lexical, { tokenizer: 'trigram' });
    assert.deepEqual(tables.find((x) => x.table === 'm')!.lexical, { tokenizer: 'porter' });
    await t.call('POST', '/v1/vector/batch', { keyspace: KS, table: 'tri', vectors: [{ key: 'k', vector: [1, 0, 0, 0], text: 'Donaudampfschifffahrt' }] });
    const sub = await t.call('POST', '/v1/search/', { keyspace: KS, table: 'tri', query: 'dampfschiff', mode: 'lexical' });
    assert.deepEqual((sub.json().matches as Match[]).map((x) => x.key), ['k']);
    const bad = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: 'bad', dimension: 4, lexical: { tokenizer: 'icu' } });
    assert.equal(bad.statusCode, 400);
    assert.ok(paths(bad).some((p) => p.startsWith('/body/lexical')), bad.body);
  });
});
