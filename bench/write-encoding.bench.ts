/**
 * What the write encoding costs the server: the same batches of vectors with metadata sent to
 * `POST /v1/vector/batch` as JSON number arrays (`vector`) and as float32 bytes in base64
 * (`vector_base64`), in one run, through app.inject() on the embedded backend with the fake
 * (instant) embedder: no network, no client-side JSON.stringify in the timing (bodies are
 * serialised before the clock starts), the embedded storage's commit included.
 *
 *   node --import tsx bench/write-encoding.bench.ts [--batches 20] [--batch 1000] [--dim 384]
 *
 * The two encodings alternate batch by batch (after one untimed warm-up batch each), each into its
 * own table, so background work and a noisy machine weigh on both alike; compare the ratio.
 * Prints a markdown table: body size, median and mean ms per batch, vectors/s (from the mean).
 */
import { performance } from 'node:perf_hooks';
import { ADMIN_KEY, startTestApp } from '../src/http/testing.ts';
import { benchArgs } from './lib/args.ts';
import { machineKind } from './machine-check.ts';
import { makeCentres, makeVectors, pct, vectorField, type WireEncoding } from './workload.ts';

const { batches: BATCHES, batch: BATCH, dim: DIM } = benchArgs({ batches: 20, batch: 1000, dim: 384 });
const KS = 'default_keyspace';
const ENCODINGS: WireEncoding[] = ['json', 'base64'];

async function main() {
  const t = await startTestApp({ model: 'fake', fakeDimension: DIM });
  try {
    const centres = makeCentres(64, DIM);
    const body = (encoding: WireEncoding, index: number): string => {
      const start = index * BATCH;
      const vectors = makeVectors(start, BATCH, DIM, centres).map((v, i) => ({
        key: `v${start + i}`,
        ...vectorField(v, encoding),
        metadata: { i: start + i, group: `g${(start + i) % 16}`, source_file: `file-${Math.floor((start + i) / 100)}.txt` },
      }));
      return JSON.stringify({ keyspace: KS, table: `enc_${encoding}`, vectors });
    };
    const send = async (payload: string): Promise<number> => {
      const t0 = performance.now();
      const res = await t.app.inject({ method: 'POST', url: '/v1/vector/batch', headers: { 'x-api-key': ADMIN_KEY, 'content-type': 'application/json' }, payload });
      const ms = performance.now() - t0;
      if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body.slice(0, 300)}`);
      return ms;
    };

    const times: Record<WireEncoding, number[]> = { json: [], base64: [] };
    const bytes: Record<WireEncoding, number> = { json: 0, base64: 0 };
    // Warm-up (JIT, table creation): batch index 0 of each, untimed.
    for (const e of ENCODINGS) await send(body(e, 0));
    for (let b = 1; b <= BATCHES; b++) {
      // Alternate which goes first, so neither always follows the other's commit.
      for (const e of b % 2 ? ENCODINGS : [...ENCODINGS].reverse()) {
        const payload = body(e, b);
        bytes[e] = Buffer.byteLength(payload);
        times[e].push(await send(payload));
      }
      process.stderr.write(`  batch ${b}/${BATCHES}: json ${times.json.at(-1)!.toFixed(1)} ms, base64 ${times.base64.at(-1)!.toFixed(1)} ms\n`);
    }
    for (const e of ENCODINGS) {
      const count = await t.call('POST', '/v1/vector/count', { keyspace: KS, table: `enc_${e}` });
      if (count.json().count !== (BATCHES + 1) * BATCH) throw new Error(`enc_${e} holds ${count.body}`);
    }

    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const label: Record<WireEncoding, string> = { json: '`vector` (JSON numbers)', base64: '`vector_base64`' };
    console.log(`\n${BATCHES} batches of ${BATCH.toLocaleString('en')} x ${DIM} vectors with metadata, app.inject(), embedded storage, fake embedder; ` +
      `${machineKind()}, node ${process.version}\n`);
    console.log('| encoding | body | ms per batch (median) | ms per batch (mean) | p90 | vectors/s (mean) |\n|---|---|---|---|---|---|');
    for (const e of ENCODINGS) {
      const m = mean(times[e]);
      console.log(`| ${label[e]} | ${(bytes[e] / 1e6).toFixed(2)} MB | ${pct(times[e], 50).toFixed(1)} | ${m.toFixed(1)} | ${pct(times[e], 90).toFixed(1)} | ${Math.round((BATCH * 1000) / m).toLocaleString('en')} |`);
    }
    const ratio = mean(times.json) / mean(times.base64);
    const medRatio = pct(times.json, 50) / pct(times.base64, 50);
    console.log(`\nbase64 is ${ratio.toFixed(2)}x the throughput of JSON numbers (mean; median ${medRatio.toFixed(2)}x).`);
  } finally {
    await t.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
