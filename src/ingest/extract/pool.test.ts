import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { ServiceError } from '../../errors.ts';
import { deflateBomb, extractionProcesses, makePdf, makeRawPdf, makeWordsDocx } from '../fixtures.ts';
import { ExtractPool, executableWritableBytes, type ExtractPoolOptions } from './pool.ts';
import { DEFAULT_EXTRACT_LIMITS } from './types.ts';

const MiB = 1 << 20;

const pools: ExtractPool[] = [];
const pool = (opts: Partial<ExtractPoolOptions>) => {
  const p = new ExtractPool({ workers: 1, queue: 4, memoryMb: 512, timeoutMs: 60_000, limits: DEFAULT_EXTRACT_LIMITS, ...opts });
  pools.push(p);
  return p;
};
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

const failsWith = (code: string, message: RegExp) => (e: unknown) => {
  assert.ok(e instanceof ServiceError, String(e));
  assert.equal(e.code, code, e.message);
  if (code !== 'rate_limited') {
    assert.equal(e.errors?.[0].path, '/file');
    assert.match(e.errors![0].message, message);
  }
  return true;
};

describe('ExtractPool', () => {
  test('reads ordinary files in a child process, and says their type', async () => {
    const p = pool({});
    const out = await p.extract(await makePdf([['The lighthouse keeper wrote it down.']]), 'a.pdf');
    assert.equal(out.type, 'pdf');
    assert.equal(out.extracted.text, 'The lighthouse keeper wrote it down.');
    assert.equal((await p.extract(Buffer.from('plain words'), 'a.txt')).extracted.text, 'plain words');
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
    await assert.rejects(p.extract(png, 'a.txt'), (e: unknown) => e instanceof ServiceError && e.code === 'unsupported_media_type');
  });

  test('a file past the time limit: its process is killed, 422 naming /file and the limit; the next file is read', async () => {
    const p = pool({ timeoutMs: 300 });
    const docx = await makeWordsDocx(16);
    await assert.rejects(p.extract(docx, 'a.docx', { limits: { maxExpandedBytes: 1024 * MiB } }), failsWith('unprocessable_file', /time limit of 300 ms/));
    assert.deepEqual(extractionProcesses().length, 0);
    assert.equal((await p.extract(Buffer.from('after the kill'), 'a.txt')).extracted.text, 'after the kill');
  });

  test('a file past the memory ceiling (pdf.js inflating 1000 MiB outside the V8 heap): 422 naming /file and the limit', async () => {
    const p = pool({ memoryMb: 256 });
    const pdf = makeRawPdf('/Filter /Fl#61teDecode', deflateBomb(1000));
    // The expansion limit lifted for this file, so that only the ceiling stands in the way.
    await assert.rejects(p.extract(pdf, 'a.pdf', { limits: { maxExpandedBytes: 4096 * MiB } }), failsWith('unprocessable_file', /memory limit of 256 MiB/));
    assert.equal((await p.extract(Buffer.from('still here'), 'a.txt')).extracted.text, 'still here');
  });

  test('at most `workers` processes at once; `queue` more wait, past that 429', async () => {
    const p = pool({ workers: 2, queue: 3 });
    const files = await Promise.all(Array.from({ length: 5 }, (_, i) => makePdf(Array.from({ length: 20 }, (_, n) => [`File ${i} page ${n} about tides.`]))));
    let most = 0;
    const sampler = setInterval(() => (most = Math.max(most, extractionProcesses().length)), 10);
    const results = await Promise.allSettled([...files, files[0]].map((f, i) => p.extract(f, `f${i}.pdf`)));
    clearInterval(sampler);
    // Two run, three wait, the sixth is refused at once.
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 5);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    assert.ok(refused.reason instanceof ServiceError && refused.reason.code === 'rate_limited', String(refused.reason));
    assert.equal(p.peakRunning, 2);
    assert.ok(most >= 1 && most <= 2, `${most} extraction processes at once`);
    assert.ok(extractionProcesses().length <= 2);
  });

  test('a client that leaves stops its extraction', async () => {
    const p = pool({});
    const left = new AbortController();
    const docx = await makeWordsDocx(16);
    const pending = p.extract(docx, 'a.docx', { limits: { maxExpandedBytes: 1024 * MiB }, signal: left.signal });
    setTimeout(() => left.abort(), 200);
    await assert.rejects(pending, (e: unknown) => e instanceof ServiceError && e.code === 'request_aborted');
    assert.equal(extractionProcesses().length, 0);
  });
});

describe('executableWritableBytes', () => {
  test('sums the read-write-execute mappings of a maps text, nothing else', () => {
    const maps = [
      '55d0c0a00000-55d0c0e00000 r-xp 00000000 08:01 123 /usr/bin/node',
      '7f13c6f80000-7f13e6f00000 rwxp 00000000 00:00 0 ',
      '7f13e6f00000-7f13e7000000 rw-p 00000000 00:00 0 ',
      '7f13e7000000-7f13e7040000 rwxp 00000000 00:00 0 ',
      '',
    ].join('\n');
    assert.equal(executableWritableBytes(maps), 0x1ff80000 + 0x40000);
    assert.equal(executableWritableBytes(''), 0);
  });
});
