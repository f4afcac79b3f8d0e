/**
 * File ingestion throughput: detect + extract + chunk (src/ingest), embedding EXCLUDED (the
 * upload endpoint adds that stage; see bench/embedding.bench.ts for its rate).
 *   node --import tsx bench/ingest.bench.ts [--runs 3] [--mb 5] [--pages 100]
 * Inputs are generated: a ~5 MB plain-text file (prose from a large made-up vocabulary, so the
 * tokenizer does real work) and a 100-page PDF (pdf-lib, Helvetica, ~45 lines a page).
 * Prints a markdown table: median of the runs after one warm-up.
 */
import path from 'node:path';
import { DEFAULT_MODEL, PROJECT_ROOT } from '../src/config/config.ts';
import { loadModel } from '../src/embedding/model.ts';
import { chunkText, DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE } from '../src/ingest/chunk.ts';
import { detectType } from '../src/ingest/detect.ts';
import { DEFAULT_EXTRACT_LIMITS, extractText } from '../src/ingest/extract/index.ts';
import { makePdf } from '../src/ingest/fixtures.ts';
import { makeText, paragraph } from './text-gen.ts';
import { benchArgs } from './lib/args.ts';

const { runs: RUNS, mb: MB, pages: PAGES } = benchArgs({ runs: 3, mb: 5, pages: 100 });


const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f = (x: number, d = 1): string => x.toFixed(d);

const model = await loadModel(path.join(PROJECT_ROOT, 'models'), DEFAULT_MODEL);

const txt = makeText(MB * 1e6);
const pdf = await makePdf(Array.from({ length: PAGES }, () => Array.from({ length: 12 }, paragraph)));

interface Row {
  input: string;
  bytes: number;
  chars: number;
  chunks: number;
  extractMs: number;
  chunkMs: number;
}
const rows: Row[] = [];

for (const [label, name, bytes] of [
  [`text file, ${f(txt.length / 1e6)} MB`, 'big.txt', txt],
  [`PDF, ${PAGES} pages, ${f(pdf.length / 1e6, 2)} MB`, 'big.pdf', pdf],
] as const) {
  const ex: number[] = [];
  const ch: number[] = [];
  let chars = 0;
  let chunks = 0;
  for (let r = 0; r <= RUNS; r++) {
    const t0 = performance.now();
    const type = detectType(bytes, name);
    const out = await extractText(bytes, type, DEFAULT_EXTRACT_LIMITS);
    const t1 = performance.now();
    const cs = chunkText(out.text, model, { chunkSize: DEFAULT_CHUNK_SIZE, overlap: DEFAULT_CHUNK_OVERLAP });
    const t2 = performance.now();
    if (r === 0) continue; // warm-up
    ex.push(t1 - t0);
    ch.push(t2 - t1);
    chars = out.text.length;
    chunks = cs.length;
  }
  rows.push({ input: label, bytes: bytes.length, chars, chunks, extractMs: median(ex), chunkMs: median(ch) });
}
await model.dispose();

console.log(`\nIngestion (detect + extract + chunk; embedding excluded), chunk_size ${DEFAULT_CHUNK_SIZE}, overlap ${DEFAULT_CHUNK_OVERLAP}, median of ${RUNS} runs, Node ${process.version}\n`);
console.log('| input | text chars | chunks | extract ms | chunk ms | total ms | MB/min (file) | MB/min (text) | chunks/s |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const total = r.extractMs + r.chunkMs;
  const perMin = 60_000 / total;
  console.log(
    `| ${r.input} | ${r.chars.toLocaleString('en')} | ${r.chunks} | ${f(r.extractMs, 0)} | ${f(r.chunkMs, 0)} | ${f(total, 0)} | ${f((r.bytes / 1e6) * perMin)} | ${f((r.chars / 1e6) * perMin)} | ${f((r.chunks * 1000) / total, 0)} |`,
  );
}
console.log('\nMB = 10^6 bytes (file) or characters (text). Add the embedding stage (bench/embedding.bench.ts: passages/s) for end-to-end.');
