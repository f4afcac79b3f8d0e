/**
 * Embedding throughput and latency of the shipped model.
 *   node --import tsx bench/embedding.bench.ts [--seconds 3] [--threads 1,2] [--bulk-workers N]
 * Rows: short queries one at a time (texts/s, p50/p99 ms), ~200-token passages in batches of 32
 * (texts/s), and 64 concurrent short queries through the micro-batching Embedder; then the same
 * passages through the bulk embedding threads (bulk-pool.ts: N threads of one ONNX thread, default
 * one per core, two batches in flight per thread), as the service embeds written text.
 * texts/CPU-s divides by this process's CPU time, so it holds up when other work shares the
 * machine; with 1 ONNX thread it is the "texts per second on one core" figure.
 */
import path from 'node:path';
import { PROJECT_ROOT, DEFAULT_MODEL } from '../src/config/config.ts';
import { Embedder } from '../src/embedding/embedder.ts';
import { BulkPool } from '../src/embedding/bulk-pool.ts';
import { loadModel, type EmbeddingModel } from '../src/embedding/model.ts';
import { benchArgs } from './lib/args.ts';

const args = benchArgs({
  seconds: 3,
  threads: '1,2',
  'model-dir': path.join(PROJECT_ROOT, 'models'),
  model: DEFAULT_MODEL,
  'bulk-workers': (await import('node:os')).availableParallelism(),
});
const SECONDS = args.seconds;
const THREADS = args.threads.split(',').map(Number);
const MODEL_DIR = args['model-dir'];
const NAME = args.model;
const BULK_WORKERS = args['bulk-workers'];

const SUBJECTS = ['the service', 'a vector index', 'my password', 'the cluster', 'this invoice', 'our search', 'the dashboard', 'a table'];
const VERBS = ['reset', 'scale', 'delete', 'configure', 'monitor', 'export', 'query', 'back up'];
const shortQuery = (i: number): string => `how do I ${VERBS[i % 8]} ${SUBJECTS[(i >> 3) % 8]} (${i})`;

const WORDS =
  'vector search engines store embeddings of documents and answer nearest neighbour queries over them quickly while keeping metadata filters exact and results ranked by similarity to the question asked by users of the service'.split(
    ' ',
  );
function passage(i: number, model: EmbeddingModel, targetTokens = 200): string {
  const out: string[] = [];
  let s = i * 2654435761;
  while (true) {
    s = (s * 1103515245 + 12345) >>> 0;
    out.push(WORDS[s % WORDS.length]);
    if (out.length % 12 === 0) out[out.length - 1] += '.';
    if (out.length >= targetTokens / 2 && model.countTokens(out.join(' ')) >= targetTokens) return out.join(' ');
  }
}

/** Process CPU time in ms since `from` (or since start). */
const cpuMs = (from?: NodeJS.CpuUsage): number => {
  const u = process.cpuUsage(from);
  return (u.user + u.system) / 1000;
};

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const f = (n: number, d = 0): string => n.toFixed(d);

interface Row {
  threads: number | string;
  workload: string;
  textsPerSec: number;
  /** Texts per second of this process's CPU time (user + system): insensitive to other load on the machine. */
  textsPerCpuSec: number;
  p50?: number;
  p99?: number;
}
const rows: Row[] = [];
const notes: string[] = [];

for (const threads of THREADS) {
  const t0 = performance.now();
  const model = await loadModel(MODEL_DIR, NAME, { threads });
  notes.push(`threads=${threads}: load (incl. SHA256SUMS check) ${f(performance.now() - t0)} ms`);

  // Warm up.
  for (let i = 0; i < 20; i++) await model.embed([shortQuery(i)]);

  // 1. Short queries, one per model call.
  {
    const lat: number[] = [];
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    let i = 0;
    while (performance.now() - start < SECONDS * 1000) {
      const s = performance.now();
      await model.embed([shortQuery(i++)]);
      lat.push(performance.now() - s);
    }
    const el = performance.now() - start;
    const cpu = cpuMs(cpu0);
    lat.sort((a, b) => a - b);
    rows.push({ threads, workload: 'short query, 1 per call', textsPerSec: (lat.length / el) * 1000, textsPerCpuSec: (lat.length / cpu) * 1000, p50: pct(lat, 50), p99: pct(lat, 99) });
  }

  // 2. ~200-token passages, batches of 32.
  {
    const passages = Array.from({ length: 64 }, (_, i) => passage(i, model));
    const toks = passages.map((p) => model.countTokens(p));
    const avg = toks.reduce((a, b) => a + b, 0) / toks.length;
    await model.embed(passages.slice(0, 32));
    const lat: number[] = [];
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    let n = 0;
    let b = 0;
    while (performance.now() - start < SECONDS * 1000 || lat.length < 3) {
      const batch = passages.slice((b % 2) * 32, (b % 2) * 32 + 32);
      b++;
      const s = performance.now();
      await model.embed(batch);
      lat.push(performance.now() - s);
      n += batch.length;
    }
    const el = performance.now() - start;
    const cpu = cpuMs(cpu0);
    lat.sort((a, c) => a - c);
    rows.push({ threads, workload: `passage ~${f(avg)} tokens, batch 32`, textsPerSec: (n / el) * 1000, textsPerCpuSec: (n / cpu) * 1000, p50: pct(lat, 50), p99: pct(lat, 99) });
  }

  // 3. Short queries through the Embedder, 64 concurrent callers (micro-batched).
  {
    const e = new Embedder(model, { maxBatch: 32, batchWindowMs: 2, cacheEntries: 0 });
    const lat: number[] = [];
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    let i = 0;
    const worker = async (): Promise<void> => {
      while (performance.now() - start < SECONDS * 1000) {
        const s = performance.now();
        await e.embed([shortQuery(i++)]);
        lat.push(performance.now() - s);
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    const el = performance.now() - start;
    const cpu = cpuMs(cpu0);
    lat.sort((a, b) => a - b);
    const st = e.stats();
    rows.push({ threads, workload: `short query, 64 concurrent via Embedder (avg batch ${f(st.texts / st.calls, 1)})`, textsPerSec: (lat.length / el) * 1000, textsPerCpuSec: (lat.length / cpu) * 1000, p50: pct(lat, 50), p99: pct(lat, 99) });
  }

  // Tokeniser cost, for reference.
  {
    const p = passage(1, model);
    const s = performance.now();
    for (let k = 0; k < 200; k++) model.countTokens(p);
    notes.push(`threads=${threads}: tokenising a ~200-token passage: ${f((performance.now() - s) / 200, 3)} ms`);
  }
  await model.dispose();
}

// 4. The same passages through the bulk threads, every thread kept busy.
{
  const model = await loadModel(MODEL_DIR, NAME, { threads: 1 });
  const pool = await BulkPool.start({ modelDir: MODEL_DIR, name: NAME, dimension: model.dimension, workers: BULK_WORKERS, threads: 1, nice: 0 });
  const passages = Array.from({ length: 64 }, (_, i) => passage(i, model));
  const avg = passages.reduce((a, p) => a + model.countTokens(p), 0) / passages.length;
  await Promise.all([pool.embed(passages.slice(0, 32)), pool.embed(passages.slice(32))]);
  const lat: number[] = [];
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  let n = 0;
  const feed = async (k: number): Promise<void> => {
    while (performance.now() - start < SECONDS * 1000) {
      const s = performance.now();
      await pool.embed(passages.slice((k % 2) * 32, (k % 2) * 32 + 32));
      lat.push(performance.now() - s);
      n += 32;
    }
  };
  await Promise.all(Array.from({ length: 2 * BULK_WORKERS }, (_, k) => feed(k)));
  const el = performance.now() - start;
  const cpu = cpuMs(cpu0);
  lat.sort((a, b) => a - b);
  rows.push({ threads: `${BULK_WORKERS} × 1 (bulk threads)`, workload: `passage ~${f(avg)} tokens, batch 32`, textsPerSec: (n / el) * 1000, textsPerCpuSec: (n / cpu) * 1000, p50: pct(lat, 50), p99: pct(lat, 99) });
  await pool.close();
  await model.dispose();
}

console.log(`\n## Embedding benchmark: ${NAME}, ${SECONDS}s per row, node ${process.version}, ${(await import('node:os')).cpus().length} CPUs\n`);
console.log('| ONNX threads | workload | texts/s | texts/CPU-s | p50 ms | p99 ms |');
console.log('|---:|---|---:|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.threads} | ${r.workload} | ${f(r.textsPerSec)} | ${f(r.textsPerCpuSec)} | ${r.p50 === undefined ? '' : f(r.p50, 2)} | ${r.p99 === undefined ? '' : f(r.p99, 2)} |`);
console.log('');
for (const n of notes) console.log(`- ${n}`);
