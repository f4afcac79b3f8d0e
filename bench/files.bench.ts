/**
 * File upload throughput, end to end: POST /v1/embed/ through app.inject() with the REAL model
 * (multipart parsing, temp file, type detection, extraction, chunking, embedding, storage).
 *   node --import tsx bench/files.bench.ts [--runs 1] [--mb 3] [--pages 100]
 * Inputs are generated: a ~3 MB plain-text file (prose from a large made-up vocabulary, as in
 * bench/ingest.bench.ts) and a 100-page PDF (src/ingest/fixtures.ts, ~12 paragraphs a page).
 * Each run uploads newly generated content (so the embedding cache cannot help) into a fresh
 * table (a first upload, not a replacement); one small warm-up upload comes first. Prints a
 * markdown table: median of the runs, and the share of the time spent inside the model.
 */
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import { makePdf } from '../src/ingest/fixtures.ts';
import { makeText, paragraph } from './text-gen.ts';
import { ADMIN_KEY, startTestApp } from '../src/http/testing.ts';
import { benchArgs } from './lib/args.ts';

const { runs: RUNS, mb: MB, pages: PAGES } = benchArgs({ runs: 1, mb: 3, pages: 100 });


function multipart(filename: string, content: Buffer, table: string): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----bench-${randomUUID()}`;
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="table"\r\n\r\n${table}\r\n`),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    content,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'x-api-key': ADMIN_KEY } };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f = (x: number, d = 1): string => x.toFixed(d);

const t = await startTestApp({ model: 'real' });
let tableNo = 0;
const modelMs = (): number => t.deps.models.get().stats().modelMs;
async function upload(name: string, bytes: Buffer): Promise<{ ms: number; chunks: number; modelMs: number }> {
  const form = multipart(name, bytes, `bench_${++tableNo}`);
  const m0 = modelMs();
  const t0 = performance.now();
  const res = await t.app.inject({ method: 'POST', url: '/v1/embed/', headers: form.headers, payload: form.payload });
  const ms = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`upload of ${name} failed: ${res.statusCode} ${res.body}`);
  return { ms, chunks: res.json().file.chunks as number, modelMs: modelMs() - m0 };
}

try {
  await upload('warmup.txt', makeText(20_000));
  const makeInputs = async () => ({
    txt: makeText(MB * 1e6),
    pdf: await makePdf(Array.from({ length: PAGES }, () => Array.from({ length: 12 }, paragraph))),
  });
  const results: Record<'txt' | 'pdf', { bytes: number; chunks: number; ms: number; modelMs: number }[]> = { txt: [], pdf: [] };
  for (let r = 0; r < RUNS; r++) {
    const inputs = await makeInputs();
    for (const kind of ['txt', 'pdf'] as const) {
      const out = await upload(`big.${kind}`, inputs[kind]);
      results[kind].push({ bytes: inputs[kind].length, ...out });
    }
  }
  const rows = (['txt', 'pdf'] as const).map((kind) => {
    const runs = results[kind];
    const mid = runs.find((x) => x.ms === median(runs.map((y) => y.ms)))!;
    const input = kind === 'txt' ? `text file, ${f(mid.bytes / 1e6, 2)} MB` : `PDF, ${PAGES} pages, ${f(mid.bytes / 1e6, 2)} MB`;
    return { input, ...mid };
  });

  const stats = t.deps.models.get().stats();
  const cpu = os.cpus();
  console.log(`\nUpload end to end (POST /v1/embed/ via app.inject, real all-MiniLM-L6-v2, chunk_size 200, overlap 40, embedded storage), median of ${RUNS} runs`);
  console.log(`Node ${process.version}, ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}\n`);
  console.log('| input | chunks | total s | in the model | chunks/s | MB/min (file) |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.input} | ${r.chunks} | ${f(r.ms / 1000)} | ${f((100 * r.modelMs) / r.ms, 0)} % | ${f((r.chunks * 1000) / r.ms, 1)} | ${f((r.bytes / 1e6) * (60_000 / r.ms), 2)} |`,
    );
  }
  console.log(`\nEmbedder over the whole run: ${stats.requestedTexts} texts asked, ${stats.texts} embedded by the model, ${stats.cacheHits} cache hits.`);
  console.log('MB = 10^6 bytes of the uploaded file. Includes multipart parsing, temp file, extraction, chunking, embedding and the atomic store.');
} finally {
  await t.close();
}
