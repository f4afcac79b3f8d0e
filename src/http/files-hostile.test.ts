import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { deflateBomb, extractionProcesses, lzwBomb, makeDocx, makePdf, makeRawPdf, makeWordsDocx } from '../ingest/fixtures.ts';
import { ADMIN_KEY, multipart, startTestApp, type TestApp } from './testing.ts';

const MiB = 1 << 20;

const upload = (t: TestApp, name: string, content: Buffer, table = 'hostile'): Promise<LightMyRequestResponse> => {
  const form = multipart([{ name: 'table', value: table }, { name: 'file', filename: name, content }]);
  return t.app.inject({ method: 'POST', url: '/v1/embed/', headers: { ...form.headers, 'x-api-key': ADMIN_KEY }, payload: form.payload });
};

/**
 * Uploads `content` and, until the answer comes, asks GET /v1/healthcheck/ every 50 ms: each must
 * answer within 1 s (the event loop is free while the file is read elsewhere). Then checks the
 * refusal: `status`, a problem body of bounded size naming /file and the limit, nothing stored.
 */
async function refusedWhileHealthy(t: TestApp, name: string, content: Buffer, status: number, message: RegExp): Promise<void> {
  const stored = await t.storedContent();
  let done = false;
  const pending = upload(t, name, content).finally(() => (done = true));
  const waits: number[] = [];
  while (!done) {
    const t0 = performance.now();
    const health = await t.call('GET', '/v1/healthcheck/', undefined, null);
    waits.push(performance.now() - t0);
    assert.equal(health.statusCode, 200, health.body);
    await sleep(50);
  }
  const res = await pending;
  assert.equal(res.statusCode, status, `${name}: ${res.body}`);
  assert.ok(res.body.length < 2048, `${name}: a ${res.body.length}-byte answer`);
  const problem = res.json();
  assert.equal(problem.status, status);
  assert.equal(problem.errors.length, 1);
  assert.equal(problem.errors[0].path, '/file');
  assert.match(problem.errors[0].message, message, name);
  assert.ok(waits.length >= 1, `${name}: no healthcheck was sent while it was read`);
  assert.ok(Math.max(...waits) < 1000, `${name}: healthchecks waited ${waits.map((w) => w.toFixed(0)).join(', ')} ms`);
  assert.deepEqual((await t.call('GET', '/v1/files/?table=hostile')).json().files, []);
  assert.deepEqual(await t.storedContent(), stored);
  assert.deepEqual(await fs.readdir(path.join(t.dataDir, 'uploads')), []);
}

describe('files: hostile uploads are read in extraction processes, off the event loop (fake model: no meaning checked)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({
      model: 'fake',
      env: { VSS_EXTRACT_MAX_EXPANDED_MB: '16', VSS_EXTRACT_WORKERS: '2', VSS_EXTRACT_MAX_MEMORY_MB: '512', VSS_EXTRACT_MAX_CHARS: '100000' },
      limits: { uploadsPerUser: 10 },
    });
  });
  after(() => t.close());

  const TOO_MUCH = /expands to more than the limit of 16777216 bytes \(16 MiB\)/;

  it('a .docx of ordinary words expanding past the limit: 413', async () => {
    const docx = await makeWordsDocx(24);
    assert.ok(docx.length < 4 * MiB, String(docx.length));
    await refusedWhileHealthy(t, 'words.docx', docx, 413, TOO_MUCH);
  });

  it('PDFs whose streams decode past the limit, however the filter is named: 413', async () => {
    const flate = deflateBomb(1000); // 1000 MiB in ~1 MB
    for (const [name, pdf] of [
      ['escaped-name.pdf', makeRawPdf('/Filter /Fl#61teDecode', flate)],
      ['by-reference.pdf', makeRawPdf('/Filter 6 0 R', flate, ['/FlateDecode'])],
      ['filter-array.pdf', makeRawPdf('/Filter [/FlateDecode]', flate)],
      ['lzw.pdf', makeRawPdf('/Filter /LZWDecode', lzwBomb(256))],
    ] as const) {
      await refusedWhileHealthy(t, name, pdf, 413, TOO_MUCH);
    }
  });

  it('files whose text passes VSS_EXTRACT_MAX_CHARS: 413, never a cut file stored', async () => {
    const words = 'the tide tables of the northern harbour '.repeat(5000); // 200,000 characters
    await refusedWhileHealthy(t, 'long.txt', Buffer.from(words), 413, /longer than the limit of 100000 characters/);
    await refusedWhileHealthy(t, 'long.docx', await makeDocx('Long', [words]), 413, /longer than the limit of 100000 characters/);
  });

  it('ordinary files are still read', async () => {
    const pdf = makeRawPdf('/Filter [/FlateDecode]', zlib.deflateSync(Buffer.from('BT /F1 12 Tf 72 700 Td (a lighthouse keeper) Tj ET\n')));
    for (const [name, bytes] of [
      ['small.pdf', pdf],
      ['report.docx', await makeDocx('Report', ['The tide came in at noon.'])],
      ['notes.txt', Buffer.from('Fog over the harbour all morning.')],
    ] as const) {
      const res = await upload(t, name, bytes, 'ordinary');
      assert.equal(res.statusCode, 200, `${name}: ${res.body}`);
      assert.equal(res.json().file.chunks, 1);
    }
    assert.deepEqual((await t.call('GET', '/v1/files/?table=ordinary')).json().files.sort(), ['notes.txt', 'report.docx', 'small.pdf']);
  });

  it('N uploads at once never run more than VSS_EXTRACT_WORKERS extraction processes', async () => {
    const files = await Promise.all(Array.from({ length: 6 }, (_, i) => makePdf(Array.from({ length: 30 }, (_, n) => [`Upload ${i}, page ${n}: the tide tables.`]))));
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, extractionProcesses().length)), 10);
    const answers = await Promise.all(files.map((f, i) => upload(t, `parallel-${i}.pdf`, f, 'parallel')));
    clearInterval(sampler);
    for (const res of answers) assert.equal(res.statusCode, 200, res.body);
    assert.ok(most >= 1 && most <= 2, `${most} extraction processes at once`);
  });
});

describe('files: the extraction ceilings answer 422 (fake model)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ model: 'fake', env: { VSS_EXTRACT_MAX_EXPANDED_MB: '4096', VSS_EXTRACT_MAX_MEMORY_MB: '256', VSS_EXTRACT_TIMEOUT_MS: '60000' } });
  });
  after(() => t.close());

  it('a PDF whose 1000 MiB stream pdf.js inflates outside the V8 heap: the memory ceiling, 422', async () => {
    // The expansion limit is lifted here, so that the process's memory ceiling is what stops it.
    await refusedWhileHealthy(t, 'escaped-name.pdf', makeRawPdf('/Filter /Fl#61teDecode', deflateBomb(1000)), 422, /memory limit of 256 MiB/);
  });
});
