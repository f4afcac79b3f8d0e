/**
 * Test and benchmark files made on the spot (dev dependencies only: pdf-lib, docx, jszip).
 * Not imported by the service itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { Document, HeadingLevel, Packer, Paragraph, TextRun } from 'docx';
import JSZip from 'jszip';
import { PDFDocument, StandardFonts } from 'pdf-lib';

/** A PDF whose pages each draw the given lines with Helvetica (lines wrapped at ~90 characters). */
export async function makePdf(pages: string[][]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = pdf.addPage([612, 792]);
    let y = 750;
    for (const line of lines) {
      for (const part of wrap(line, 90)) {
        if (y < 40) break;
        page.drawText(part, { x: 40, y, size: 10, font });
        y -= 14;
      }
      y -= 8;
    }
  }
  return Buffer.from(await pdf.save());
}

function wrap(line: string, width: number): string[] {
  const out: string[] = [];
  let cur = '';
  for (const w of line.split(' ')) {
    if (cur !== '' && cur.length + 1 + w.length > width) {
      out.push(cur);
      cur = w;
    } else cur = cur === '' ? w : `${cur} ${w}`;
  }
  if (cur !== '') out.push(cur);
  return out;
}

/** A .docx with a heading and paragraphs. */
export async function makeDocx(heading: string, paragraphs: string[]): Promise<Buffer> {
  const doc = new Document({
    sections: [
      {
        children: [new Paragraph({ text: heading, heading: HeadingLevel.HEADING_1 }), ...paragraphs.map((p) => new Paragraph({ children: [new TextRun(p)] }))],
      },
    ],
  });
  return Packer.toBuffer(doc);
}

/**
 * A zip bomb dressed as a .docx: `word/document.xml` is `expandedMiB` MiB of zeros, DEFLATE
 * level 9 (~1000:1). The zeros are streamed into jszip 1 MiB at a time, never held whole.
 */
export async function makeZipBomb(expandedMiB: number): Promise<Buffer> {
  const zip = new JSZip();
  const block = Buffer.alloc(1 << 20);
  let left = expandedMiB;
  zip.file('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>');
  zip.file(
    'word/document.xml',
    new Readable({
      read() {
        this.push(left-- > 0 ? block : null);
      },
    }),
  );
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE', compressionOptions: { level: 9 } });
}

/**
 * The same zip with the central directory's uncompressed size of `name` rewritten to `claimed`
 * (a zip that lies about its sizes so that the central-directory check passes).
 */
export function lieAboutSize(zip: Buffer, name: string, claimed: number): Buffer {
  const out = Buffer.from(zip);
  for (let p = 0; p + 46 <= out.length; p++) {
    if (out.readUInt32LE(p) !== 0x02014b50) continue;
    const nameLen = out.readUInt16LE(p + 28);
    if (out.toString('utf8', p + 46, p + 46 + nameLen) === name) {
      out.writeUInt32LE(claimed, p + 24);
      return out;
    }
  }
  throw new Error(`${name} not in the central directory`);
}

/**
 * A .docx whose `word/document.xml` is `expandedMiB` MiB of pseudo-random words in paragraphs:
 * ordinary text, compressing ~3-4 times (far below any ratio guard). Streamed into jszip.
 */
export async function makeWordsDocx(expandedMiB: number): Promise<Buffer> {
  const words = 'harbour keeper lantern ship fog tide rope anchor gull storm quay ledger north south cargo pilot'.split(' ');
  let seed = 12345;
  // One MiB of words, repeated: DEFLATE looks back 32 KiB, so a repeat compresses like new words.
  const block = (): Buffer => {
    const parts: string[] = [];
    let n = 0;
    while (n < 1 << 20) {
      let p = '<w:p><w:r><w:t>';
      for (let i = 0; i < 40; i++) p += `${words[(seed = (seed * 1103515245 + 12345) >>> 0) % words.length]}${seed % 7} `;
      p += '</w:t></w:r></w:p>';
      parts.push(p);
      n += p.length;
    }
    return Buffer.from(parts.join(''));
  };
  const mib = block();
  let left = expandedMiB;
  const zip = new JSZip();
  zip.file('[Content_Types].xml', '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>');
  zip.file('_rels/.rels', '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>');
  let opened = false;
  zip.file(
    'word/document.xml',
    new Readable({
      read() {
        if (!opened) {
          opened = true;
          this.push('<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>');
        }
        if (left-- > 0) this.push(mib);
        else {
          this.push('</w:body></w:document>');
          this.push(null);
        }
      },
    }),
  );
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE', compressionOptions: { level: 6 } });
}

/**
 * A zlib stream of `expandedMiB` MiB of spaces, ~1 KiB per MiB: one fully flushed DEFLATE block
 * of 1 MiB repeated (made in milliseconds however large). Its checksum is left zero: pdf.js does
 * not check it, and the counting decoders stop long before it.
 */
export function deflateBomb(expandedMiB: number): Buffer {
  const block = zlib.deflateRawSync(Buffer.alloc(1 << 20, 0x20), { level: 9, finishFlush: zlib.constants.Z_FULL_FLUSH });
  const end = zlib.deflateRawSync(Buffer.alloc(0));
  return Buffer.concat([Buffer.from([0x78, 0xda]), ...Array.from({ length: expandedMiB }, () => block), end, Buffer.alloc(4)]);
}

/** Writes LZW codes as PDF's LZWDecode reads them (EarlyChange 1): the width follows the decoder's table size. */
function packLzw(codes: number[]): Buffer {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  let next = 258;
  let prev = false;
  for (const code of codes) {
    if (code === 256) {
      next = 258;
      prev = false;
    }
    const width = Math.min(12, 32 - Math.clz32(next + 1));
    acc = (acc << width) | code;
    bits += width;
    while (bits >= 8) {
      bits -= 8;
      out.push((acc >>> bits) & 0xff);
    }
    acc &= (1 << bits) - 1;
    if (code === 256) continue;
    if (prev && next < 4096) next++;
    prev = true;
  }
  if (bits > 0) out.push((acc << (8 - bits)) & 0xff);
  return Buffer.from(out);
}

/** `data` LZW-encoded for a PDF (a textbook encoder; the table is cleared when full). */
export function lzwEncode(data: Buffer): Buffer {
  const codes: number[] = [256];
  let table = new Map<string, number>();
  let next = 258;
  let w = '';
  for (const byte of data) {
    const wc = w + String.fromCharCode(byte);
    if (wc.length === 1 || table.has(wc)) {
      w = wc;
      continue;
    }
    codes.push(w.length === 1 ? w.charCodeAt(0) : table.get(w)!);
    if (next < 4095) table.set(wc, next++);
    else {
      codes.push(256);
      table = new Map();
      next = 258;
    }
    w = String.fromCharCode(byte);
  }
  if (w !== '') codes.push(w.length === 1 ? w.charCodeAt(0) : table.get(w)!);
  codes.push(257);
  return packLzw(codes);
}

/**
 * PDF LZWDecode data (EarlyChange 1) that grows its table by one zero byte per code to the
 * 4,096-entry limit, then repeats the longest entry (3,839 bytes for 12 bits): `expandedMiB`
 * MiB from ~1/2500 of that.
 */
export function lzwBomb(expandedMiB: number): Buffer {
  const codes: number[] = [0];
  let made = 1;
  for (let c = 258; c < 4096; c++) {
    codes.push(c);
    made += c - 256;
  }
  while (made < expandedMiB * (1 << 20)) {
    codes.push(4095);
    made += 3839;
  }
  codes.push(257);
  return packLzw(codes);
}

/**
 * A one-page PDF (Helvetica) whose content stream is `data` under the dictionary entries
 * `streamDict` (e.g. `/Filter /FlateDecode`); `extra` objects are numbered from 6 on (for
 * `/Filter 6 0 R`). A correct cross-reference table, so every reader parses it the same way.
 */
export function makeRawPdf(streamDict: string, data: Buffer, extra: string[] = []): Buffer {
  const objects: Buffer[] = [
    Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
    Buffer.from('<< /Type /Pages /Kids [3 0 R] /Count 1 >>'),
    Buffer.from('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>'),
    Buffer.concat([Buffer.from(`<< ${streamDict} /Length ${data.length} >>\nstream\n`), data, Buffer.from('\nendstream')]),
    Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'),
    ...extra.map((e) => Buffer.from(e)),
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

/** A content stream showing `text` on the page, then `padding` spaces. */
export const pageContent = (text: string, padding = 0): Buffer =>
  Buffer.concat([Buffer.from(`BT /F1 12 Tf 72 700 Td (${text}) Tj ET\n`), Buffer.alloc(padding, 0x20)]);

/** Command lines of the child processes of `ppid` (from /proc: what runs, not what a pool says). */
export function childCommands(ppid: number): string[] {
  const out: string[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === ppid) out.push(readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' '));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Extraction processes that are children of this one. */
export const extractionProcesses = (): string[] => childCommands(process.pid).filter((c) => /extract\.worker\.(ts|mjs)/.test(c));
