/**
 * Test and benchmark files made on the spot (dev dependencies only: pdf-lib, docx, jszip).
 * Not imported by the service itself.
 */
import { Readable } from 'node:stream';
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
