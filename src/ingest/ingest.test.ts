import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PROJECT_ROOT } from '../config/config.ts';
import { loadModel, type EmbeddingModel } from '../embedding/model.ts';
import { ServiceError } from '../errors.ts';
import { DEFAULT_EXTRACT_LIMITS } from './extract/index.ts';
import { ExtractPool } from './extract/pool.ts';
import { makeDocx, makePdf, makeZipBomb } from './fixtures.ts';
import { prepareFile, sanitizeFileName } from './ingest.ts';

const SENTENCE = 'The lighthouse keeper logged every passing ship in a blue notebook.';
const code = (c: string, p?: string) => (e: unknown) =>
  e instanceof ServiceError && e.code === c && (p === undefined || e.errors?.some((x) => x.path === p) === true);

describe('prepareFile', () => {
  let model: EmbeddingModel;
  const extractor = new ExtractPool({ workers: 1, queue: 4, memoryMb: 512, timeoutMs: 60_000, limits: DEFAULT_EXTRACT_LIMITS });
  before(async () => {
    model = await loadModel(path.join(PROJECT_ROOT, 'models'), 'all-MiniLM-L6-v2');
  });
  after(async () => {
    await extractor.close();
    await model?.dispose();
  });

  test('every supported type: detected by content, text extracted, chunked within the window', async () => {
    const long = Array.from({ length: 40 }, (_, i) => `Paragraph ${i} says that ship number ${i} left the harbour at dawn. ${SENTENCE}`);
    const files: Array<[string, Buffer, string]> = [
      ['report.pdf', await makePdf([long.slice(0, 20), long.slice(20)]), 'pdf'],
      ['report.docx', await makeDocx('Report', long), 'docx'],
      ['page.html', Buffer.from(`<html><body><h1>Log</h1>${long.map((p) => `<p>${p}</p>`).join('')}</body></html>`), 'html'],
      ['log.json', Buffer.from(JSON.stringify({ entries: long.map((text, day) => ({ day, text })) })), 'json'],
      ['log.csv', Buffer.from('day,text\n' + long.map((p, i) => `${i},"${p}"`).join('\n')), 'csv'],
      ['log.md', Buffer.from('# Log\n\n' + long.join('\n\n')), 'md'],
      ['log.txt', Buffer.from(long.join('\n\n')), 'txt'],
    ];
    for (const [name, bytes, type] of files) {
      const out = await prepareFile(bytes, name, { extractor, tokenizer: model, chunkSize: 128, overlap: 32 });
      assert.equal(out.type, type, name);
      const flat = (t: string) => t.replace(/\s+/g, ' '); // PDF text keeps the page's line breaks
      assert.ok(flat(out.text).includes(SENTENCE), `${name}: ${out.text.slice(0, 200)}`);
      assert.ok(out.chunks.length > 2, name);
      for (const c of out.chunks) {
        assert.ok(c.tokens <= 128 && model.tokenize(c.text).ids.length === c.tokens, name);
        assert.equal(c.text, out.text.slice(c.start, c.end));
      }
      assert.ok(out.chunks.some((c) => flat(c.text).includes('ship number 39 left')), name);
    }
  });

  test('defaults: chunk size 200, overlap 40', async () => {
    const text = Array.from({ length: 300 }, (_, i) => `Sentence ${i} is about the harbour.`).join(' ');
    const out = await prepareFile(Buffer.from(text), 'a.txt', { extractor, tokenizer: model });
    assert.ok(out.chunks.every((c) => c.tokens <= 200));
    assert.ok(out.chunks.some((c) => c.tokens > 180));
  });

  test('errors: 415 unsupported, 400 empty / corrupt / bomb / bad options (checked first)', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    await assert.rejects(prepareFile(png, 'a.txt', { extractor, tokenizer: model }), code('unsupported_media_type'));
    await assert.rejects(prepareFile(Buffer.alloc(0), 'a.txt', { extractor, tokenizer: model }), code('validation_failed', '/file'));
    await assert.rejects(prepareFile(Buffer.from('%PDF-1.4 junk'), 'a.pdf', { extractor, tokenizer: model }), code('validation_failed', '/file'));
    const bomb = await makeZipBomb(20);
    await assert.rejects(prepareFile(bomb, 'a.docx', { extractor, tokenizer: model, limits: { maxExpandedBytes: 4 << 20 } }), code('validation_failed', '/file'));
    await assert.rejects(prepareFile(png, 'a.txt', { extractor, tokenizer: model, chunkSize: 300 }), code('validation_failed', '/body/chunk_size'));
    await assert.rejects(prepareFile(png, 'a.txt', { extractor, tokenizer: model, chunkSize: 100, overlap: 60 }), code('validation_failed', '/body/chunk_overlap'));
    // The model's own window bounds chunk_size.
    const small = { tokenize: (t: string) => model.tokenize(t), maxTokens: 64 };
    await assert.rejects(prepareFile(Buffer.from('x'), 'a.txt', { extractor, tokenizer: small, chunkSize: 100 }), code('validation_failed', '/body/chunk_size'));
  });

  test('limits: a file giving more chunks than allowed is refused, naming chunk_size', async () => {
    const text = Buffer.from('The keeper climbed the stairs. '.repeat(400));
    const few = await prepareFile(text, 'a.txt', { extractor, tokenizer: model, maxChunks: 50 });
    assert.ok(few.chunks.length <= 50, String(few.chunks.length));
    await assert.rejects(prepareFile(text, 'a.txt', { extractor, tokenizer: model, chunkSize: 16, overlap: 8, maxChunks: 50 }), code('validation_failed', '/body/chunk_size'));
  });

  test('limits: text past maxChars is a 413 naming /file (through the extraction process)', async () => {
    await assert.rejects(prepareFile(Buffer.from('word '.repeat(10_000)), 'a.txt', { extractor, tokenizer: model, limits: { maxChars: 1000 } }), code('payload_too_large', '/file'));
  });
});

describe('sanitizeFileName', () => {
  test('base name only, no .., no control characters, no leading dots', () => {
    assert.equal(sanitizeFileName('../../etc/passwd'), 'passwd');
    assert.equal(sanitizeFileName('C:\\x\\y.txt'), 'y.txt');
    assert.equal(sanitizeFileName('a\u0000b.txt'), 'ab.txt');
    assert.equal(sanitizeFileName('..'), 'upload');
    assert.equal(sanitizeFileName('.hidden'), 'hidden');
    assert.equal(sanitizeFileName('dir/..'), 'upload');
    assert.equal(sanitizeFileName('a/b\\..\\c..d.txt'), 'c.d.txt');
    assert.equal(sanitizeFileName('  report final.pdf  '), 'report final.pdf');
    assert.equal(sanitizeFileName('evil\u202etxt.exe'), 'eviltxt.exe');
    assert.equal(sanitizeFileName('line\nbreak\r.txt'), 'linebreak.txt');
    assert.equal(sanitizeFileName(''), 'upload');
    assert.equal(sanitizeFileName('/'), 'upload');
    assert.equal(sanitizeFileName('café.md'), 'café.md');
  });

  test('at most 255 UTF-8 bytes, extension kept, no split character', () => {
    const long = sanitizeFileName('é'.repeat(300) + '.pdf');
    assert.ok(Buffer.byteLength(long) <= 255);
    assert.ok(long.endsWith('é.pdf'));
    assert.ok(!long.includes('\ufffd'));
    assert.equal(sanitizeFileName('a'.repeat(400)).length, 255);
  });
});
