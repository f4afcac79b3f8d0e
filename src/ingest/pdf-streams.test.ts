import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { describe, test } from 'node:test';
import { extractText, type ExtractLimits } from './extract.ts';
import { flateExpandedBytes } from './pdf-streams.ts';

const MiB = 1024 * 1024;

/** A one-page PDF whose content stream shows a line of text, then `padding` spaces, Flate-compressed. */
function pdfWithContent(padding: number): Buffer {
  const content = zlib.deflateSync(Buffer.concat([Buffer.from('BT /F1 12 Tf 72 700 Td (a lighthouse keeper) Tj ET\n'), Buffer.alloc(padding, 0x20)]), { level: 9 });
  const objects: Buffer[] = [
    Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
    Buffer.from('<< /Type /Pages /Kids [3 0 R] /Count 1 >>'),
    Buffer.from('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>'),
    Buffer.concat([Buffer.from(`<< /Filter /FlateDecode /Length ${content.length} >>\nstream\n`), content, Buffer.from('\nendstream')]),
    Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'),
  ];
  const parts = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let at = parts[0].length;
  objects.forEach((o, i) => {
    offsets.push(at);
    const b = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), o, Buffer.from('\nendobj\n')]);
    parts.push(b);
    at += b.length;
  });
  const xref = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  parts.push(Buffer.from(`${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${at}\n%%EOF\n`));
  return Buffer.concat(parts);
}

describe('PDF Flate streams are measured before pdf.js inflates them', () => {
  test('counts what the streams expand to, and stops counting past the limit', async () => {
    const pdf = pdfWithContent(300_000);
    const n = await flateExpandedBytes(pdf, 10 * MiB);
    assert.ok(n > 300_000 && n < 300_100, String(n));
    assert.equal(await flateExpandedBytes(pdf, 100_000), 100_001);
  });

  test('a PDF that expands past maxExpandedBytes is payload_too_large; under it, its text is read', async () => {
    const limits: ExtractLimits = { maxChars: 1_000_000, maxPages: 10, maxExpandedBytes: 1 * MiB };
    // 4 MiB of spaces compress to ~4 KB: a small upload, a large expansion.
    const bomb = pdfWithContent(4 * MiB);
    assert.ok(bomb.length < 16 * 1024, String(bomb.length));
    await assert.rejects(extractText(bomb, 'pdf', limits), (e: { code?: string; errors?: { path: string }[] }) => e.code === 'payload_too_large' && e.errors?.[0].path === '/file');
    const fine = await extractText(pdfWithContent(100_000), 'pdf', limits);
    assert.match(fine.text, /lighthouse keeper/);
  });
});
