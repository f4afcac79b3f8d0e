/**
 * A PDF's Flate streams, measured before pdf.js reads them. pdf.js inflates each content stream
 * whole, and DEFLATE expands up to ~1,000 times: a 1 MiB PDF became 2 GiB of memory. So every
 * stream marked /FlateDecode is inflated here once, its output counted and dropped as it comes
 * (memory stays at zlib's chunks; other requests run between them), with a ceiling on the total,
 * and a PDF past the ceiling is refused before pdf.js sees it (as checkDocxZip does for Word).
 *
 * The scan is lexical (`stream` … `endstream`), not a PDF parser: a stream whose bytes are not
 * plain zlib (encrypted, or ASCII85 before Flate) is skipped, and pdf.js decides about it.
 */
import { Readable } from 'node:stream';
import zlib from 'node:zlib';

const STREAM = Buffer.from('stream');
const END = Buffer.from('endstream');
/** How far before `stream` its dictionary may start. */
const DICT_LOOKBACK = 4096;

/** Bytes the PDF's Flate streams expand to, up to `limit + 1` (past the limit it stops counting). */
export async function flateExpandedBytes(pdf: Buffer, limit: number): Promise<number> {
  let total = 0;
  for (let at = pdf.indexOf(STREAM); at >= 0; at = pdf.indexOf(STREAM, at + STREAM.length)) {
    if (at >= 3 && pdf.subarray(at - 3, at).toString('latin1') === 'end') continue; // `endstream`
    let start = at + STREAM.length;
    if (pdf[start] === 0x0d) start++;
    if (pdf[start] !== 0x0a && pdf[start - 1] !== 0x0d) continue; // the keyword is followed by an EOL
    if (pdf[start] === 0x0a) start++;
    const dict = pdf.subarray(Math.max(0, at - DICT_LOOKBACK), at).toString('latin1');
    const open = dict.lastIndexOf('obj');
    if (!/\/FlateDecode\b/.test(open >= 0 ? dict.slice(open) : dict)) continue;
    const end = pdf.indexOf(END, start);
    const data = pdf.subarray(start, end < 0 ? pdf.length : end);
    total += await inflatedLength(data, limit - total + 1);
    if (total > limit) return limit + 1;
    if (end < 0) break;
    at = end;
  }
  return total;
}

/** Bytes `data` inflates to, counting at most `cap`; what is not zlib counts as what it gave so far. */
async function inflatedLength(data: Buffer, cap: number): Promise<number> {
  let n = 0;
  const inflate = zlib.createInflate({ finishFlush: zlib.constants.Z_SYNC_FLUSH });
  try {
    for await (const chunk of Readable.from([data]).pipe(inflate) as AsyncIterable<Buffer>) {
      n += chunk.length;
      if (n >= cap) break;
    }
  } catch {
    // Not zlib as it stands (encrypted, another filter first): pdf.js reads it or fails on it.
  } finally {
    inflate.destroy();
  }
  return n;
}
