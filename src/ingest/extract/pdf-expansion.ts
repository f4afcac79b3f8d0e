/**
 * What a PDF's streams decode to, counted on the decoders' output before pdf.js reads them. pdf.js
 * decodes each content stream whole (outside the V8 heap): a 1 MB PDF became 2.1 GB. A text scan
 * of the file cannot see every filter (`/Fl#61teDecode`, `/Filter 5 0 R`, arrays, LZW), so the
 * file is parsed as PDF objects (pdf-lib: names unescaped, references resolved) and every stream
 * run through its Flate and LZW filters here, each one's output counted and dropped as it comes.
 * Filters that cannot expand much (ASCIIHex, ASCII85) or are images are left to pdf.js, inside
 * the extraction process's memory ceiling (see pool.ts), as is anything this parser misses.
 */
import { Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { PDFArray as PdfArray, PDFDict as PdfDict, PDFObject as PdfObject } from 'pdf-lib';
import { lazyImport } from '../../platform/lazy-import.ts';
import { lzwDecode } from './lzw.ts';

const loadPdfLib = lazyImport(() => import('pdf-lib'));

type Filter = { kind: 'flate' | 'lzw'; earlyChange: number } | { kind: 'other' };

/** A name's characters, `#xx` escapes decoded in either case (pdf-lib decodes upper case only and re-escapes the rest). */
function nameText(encoded: string): string {
  let s = encoded.startsWith('/') ? encoded.slice(1) : encoded;
  for (let i = 0; i < 2 && s.includes('#'); i++) s = s.replace(/#([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
  return s;
}

/** Bytes the PDF's streams decode to, up to `limit + 1` (past the limit it stops). Null when the file is not parsable as PDF objects. */
export async function pdfExpandedBytes(pdf: Uint8Array, limit: number): Promise<number | null> {
  const lib = await loadPdfLib();
  let context;
  try {
    context = await lib.PDFParser.forBytesWithOptions(pdf, Infinity, false).parseDocument();
  } catch {
    return null; // pdf.js decides about it, within the process's ceilings
  }
  const resolve = (o: PdfObject | undefined): PdfObject | undefined => (o instanceof lib.PDFRef ? context.lookup(o) : o);
  const filtersOf = (dict: PdfDict): Filter[] => {
    const f = resolve(dict.get(lib.PDFName.of('Filter')));
    const p = resolve(dict.get(lib.PDFName.of('DecodeParms')) ?? dict.get(lib.PDFName.of('DP')));
    const names = f instanceof lib.PDFArray ? (f as PdfArray).asArray().map(resolve) : f === undefined ? [] : [f];
    const params = p instanceof lib.PDFArray ? (p as PdfArray).asArray().map(resolve) : names.map(() => p);
    return names.map((n, i) => {
      if (!(n instanceof lib.PDFName)) return { kind: 'other' };
      const name = nameText(n.asString());
      const parms = params[i];
      const early = parms instanceof lib.PDFDict ? resolve(parms.get(lib.PDFName.of('EarlyChange'))) : undefined;
      const earlyChange = early instanceof lib.PDFNumber ? early.asNumber() : 1;
      if (name === 'FlateDecode' || name === 'Fl') return { kind: 'flate', earlyChange };
      if (name === 'LZWDecode' || name === 'LZW') return { kind: 'lzw', earlyChange };
      return { kind: 'other' };
    });
  };
  let total = 0;
  for (const [, obj] of context.enumerateIndirectObjects()) {
    if (!(obj instanceof lib.PDFRawStream)) continue;
    let data: Uint8Array = obj.contents;
    const filters = filtersOf(obj.dict);
    // Through the leading Flate/LZW filters; the last is only counted, the others kept (capped) for the next.
    let last = 0;
    while (last < filters.length && filters[last].kind !== 'other') last++;
    for (let i = 0; i < last; i++) {
      const f = filters[i] as { kind: 'flate' | 'lzw'; earlyChange: number };
      const cap = limit - total;
      const keep = i < last - 1;
      const out = f.kind === 'flate' ? await inflate(data, cap, keep) : lzw(data, cap, f.earlyChange, keep);
      total += out.count;
      if (total > limit) return limit + 1;
      if (!keep) break;
      data = out.bytes!;
    }
  }
  return total;
}

interface Decoded {
  count: number;
  bytes?: Uint8Array;
}

/** Inflates `data`, counting at most `cap + 1` bytes; what is not zlib counts as what it gave so far. */
async function inflate(data: Uint8Array, cap: number, keep: boolean): Promise<Decoded> {
  let count = 0;
  const kept: Buffer[] = [];
  const inflater = zlib.createInflate({ finishFlush: zlib.constants.Z_SYNC_FLUSH });
  try {
    for await (const chunk of Readable.from([data]).pipe(inflater) as AsyncIterable<Buffer>) {
      count += chunk.length;
      if (keep) kept.push(chunk);
      if (count > cap) break;
    }
  } catch {
    // Not zlib as it stands (encrypted, damaged): pdf.js reads it or fails on it.
  } finally {
    inflater.destroy();
  }
  return keep ? { count, bytes: Buffer.concat(kept) } : { count };
}

function lzw(data: Uint8Array, cap: number, earlyChange: number, keep: boolean): Decoded {
  if (!keep) return { count: lzwDecode(data, cap, earlyChange) };
  const kept: Buffer[] = [];
  const count = lzwDecode(data, cap, earlyChange, (b) => kept.push(Buffer.from(b)));
  return { count, bytes: Buffer.concat(kept) };
}
