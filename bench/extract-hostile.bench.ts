/**
 * What stops hostile uploads, and what they cost the event loop (issue #24): each file is read
 * through the extraction pool with the default limits, while a 20 ms timer measures the server
 * process's longest stall.
 *   node --import tsx bench/extract-hostile.bench.ts     (~1 minute)
 * Files: a 1 MB PDF whose `/Fl#61teDecode` stream expands to 1000 MiB (with the default
 * expansion limit, then with it lifted so that pdf.js inflates it), and a .docx of 48 MiB of
 * ordinary words (~4 MB).
 */
import { ExtractPool } from '../src/ingest/extract/pool.ts';
import { DEFAULT_EXTRACT_LIMITS } from '../src/ingest/extract/types.ts';
import { deflateBomb, makeRawPdf, makeWordsDocx } from '../src/ingest/fixtures.ts';

const MiB = 1 << 20;
const pool = new ExtractPool({ workers: 2, queue: 4, memoryMb: 1024, timeoutMs: 120_000, limits: DEFAULT_EXTRACT_LIMITS });

async function run(name: string, bytes: Buffer, file: string, limits = {}): Promise<void> {
  let stall = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last - 20);
    last = now;
  }, 20);
  const t = performance.now();
  let outcome: string;
  try {
    const r = await pool.extract(bytes, file, { limits });
    outcome = `read: ${r.extracted.text.length} characters`;
  } catch (e) {
    const err = e as { code?: string; message?: string };
    outcome = `${err.code}: ${err.message}`;
  }
  clearInterval(timer);
  console.log(`| ${name} | ${(bytes.length / MiB).toFixed(1)} MB | ${outcome} | ${((performance.now() - t) / 1000).toFixed(1)} s | ${stall.toFixed(0)} ms |`);
}

console.log(`\nHostile uploads through the extraction pool (memory ceiling 1024 MiB, expansion limit 256 MiB), Node ${process.version}\n`);
console.log('| file | size | outcome | time | longest event-loop stall |');
console.log('|---|---|---|---|---|');
const pdf = makeRawPdf('/Filter /Fl#61teDecode', deflateBomb(1000));
await run('PDF, 1000 MiB Flate stream, escaped filter name', pdf, 'a.pdf');
await run('the same, expansion limit lifted (pdf.js inflates it)', pdf, 'a.pdf', { maxExpandedBytes: 8192 * MiB });
await run('.docx, 48 MiB of ordinary words', await makeWordsDocx(48), 'a.docx');
await pool.close();
