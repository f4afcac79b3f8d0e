import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { describe, test } from 'node:test';
import { deflateBomb, lzwBomb, lzwEncode, makeRawPdf, pageContent } from '../fixtures.ts';
import { extractText, type ExtractLimits } from './index.ts';
import { lzwDecode } from './lzw.ts';
import { pdfExpandedBytes } from './pdf-expansion.ts';

const MiB = 1 << 20;
const LIMIT = 16 * MiB;

describe('PDF streams are counted on what the decoders give', () => {
  test('the Flate bomb is caught however its filter is written', async () => {
    const bomb = deflateBomb(200);
    assert.ok(bomb.length < 300 * 1024, String(bomb.length));
    for (const [how, pdf] of [
      ['plain name', makeRawPdf('/Filter /FlateDecode', bomb)],
      ['#xx escape', makeRawPdf('/Filter /Fl#61teDecode', bomb)],
      ['lower-case #xx escape', makeRawPdf('/Filter /F#6cate#44ecode', bomb)],
      ['abbreviation', makeRawPdf('/Filter /Fl', bomb)],
      ['by reference', makeRawPdf('/Filter 6 0 R', bomb, ['/FlateDecode'])],
      ['array', makeRawPdf('/Filter [/FlateDecode]', bomb)],
      ['array by reference', makeRawPdf('/Filter 6 0 R', bomb, ['[/Fl#61teDecode]'])],
      ['dictionary past 4 KiB', makeRawPdf(`/Padding (${'x'.repeat(8192)}) /Filter /FlateDecode`, bomb)],
    ] as const) {
      assert.equal(await pdfExpandedBytes(pdf, LIMIT), LIMIT + 1, how);
    }
  });

  test('LZW: a bomb is caught; an ordinary LZW stream decodes exactly, and pdf.js reads its text', async () => {
    const data = Buffer.concat([pageContent('a lighthouse keeper', 3000), Buffer.from('tide and fog '.repeat(5000))]);
    const encoded = lzwEncode(data);
    const parts: Buffer[] = [];
    assert.equal(lzwDecode(encoded, 10 * MiB, 1, (b) => parts.push(Buffer.from(b))), data.length);
    assert.ok(Buffer.concat(parts).equals(data));

    const bomb = lzwBomb(64);
    assert.ok(bomb.length < 40 * 1024, String(bomb.length));
    assert.equal(await pdfExpandedBytes(makeRawPdf('/Filter /LZWDecode', bomb), LIMIT), LIMIT + 1);
    assert.equal(await pdfExpandedBytes(makeRawPdf('/Filter [/FlateDecode /LZWDecode]', zlib.deflateSync(bomb)), LIMIT), LIMIT + 1);

    const limits: ExtractLimits = { maxChars: 100_000, maxPages: 10, maxExpandedBytes: LIMIT };
    const pdf = makeRawPdf('/Filter /LZWDecode', lzwEncode(pageContent('a lighthouse keeper', 100)));
    assert.equal((await extractText(pdf, 'pdf', limits)).text, 'a lighthouse keeper');
    await assert.rejects(extractText(makeRawPdf('/Filter /LZW', bomb), 'pdf', limits), (e: { code?: string; errors?: { path: string; message: string }[] }) => {
      assert.equal(e.code, 'payload_too_large');
      assert.equal(e.errors?.[0].path, '/file');
      assert.match(e.errors![0].message, /expands to more than the limit of 16777216 bytes/);
      return true;
    });
  });

  test('counts what ordinary streams decode to, and a PDF under the limit is read', async () => {
    const content = pageContent('a lighthouse keeper', 300_000);
    const pdf = makeRawPdf('/Filter /FlateDecode', zlib.deflateSync(content));
    assert.equal(await pdfExpandedBytes(pdf, LIMIT), content.length);
    const out = await extractText(pdf, 'pdf', { maxChars: 100_000, maxPages: 10, maxExpandedBytes: 1 * MiB });
    assert.equal(out.text, 'a lighthouse keeper');
  });
});
