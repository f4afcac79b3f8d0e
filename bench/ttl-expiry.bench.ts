/**
 * Do a million rows expiring at once stall searches? On the embedded store, straight through the
 * storage API (vectors stored directly, no model), with an injected clock so that they all
 * expire at one chosen moment:
 *
 *   node --import tsx bench/ttl-expiry.bench.ts [--live 100000] [--expiring 1000000] [--dim 16]
 *     [--batch-rows 200] [--seconds 10] [--qps 20] [--ann]
 *
 * Searches scan every row (exact) unless --ann, which waits for the ANN index first (about a
 * minute per 100,000 rows on 2 shared cores, so use it with fewer rows).
 * One table holds `--live` rows without a TTL and `--expiring` rows with one (interleaved, the
 * same clustered unit vectors as the other benches). Searches (candidates 100, limit 10, queries
 * near the data) are asked at `--qps` a second, one at a time, each timed from when it was due,
 * in four phases of the same run:
 *   anchor    no row expired (`--seconds`);
 *   hidden    the clock moved past the expiry, no sweep yet (in the service, at most one sweep
 *             interval): searches leave the expired rows out of the ANN candidates (over-fetching)
 *             and the scans (`--seconds`);
 *   removal   while the sweep takes them out of the graphs, then deletes them in batches of
 *             `--batch-rows` (lexical entries with them), yielding between batches: as long as it takes;
 *   after     all removed (`--seconds`), while the graphs re-index the live rows of the graphs the
 *             expiry left mostly dead (they are scanned as pending rows meanwhile).
 * Reports p50 and p99 per phase, their ratios to the anchor, the machine's 1-minute load average
 * as each phase began, the first read after the expiry (it moves the expired rows into the
 * set reads leave out), the sweep's rows/s, and RssAnon. Absolute figures depend on the (shared)
 * machine; the ratios are the result, and a load that moved between phases says how far to trust them.
 */
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { openEmbeddedStorage, type EmbeddedStorage } from '../src/storage/embedded/embedded-storage.ts';
import type { VectorRow } from '../src/storage/api.ts';
import { makeCentres, pct, writeVector } from './workload.ts';

const { values: args } = parseArgs({
  options: {
    live: { type: 'string', default: '100000' },
    expiring: { type: 'string', default: '1000000' },
    dim: { type: 'string', default: '16' },
    'batch-rows': { type: 'string', default: '200' },
    seconds: { type: 'string', default: '10' },
    qps: { type: 'string', default: '20' },
    ann: { type: 'boolean', default: false },
  },
});
const LIVE = Number(args.live);
const EXPIRING = Number(args.expiring);
const DIM = Number(args.dim);
const BATCH_ROWS = Number(args['batch-rows']);
const SECONDS = Number(args.seconds);
const ANN = args.ann === true;
const QPS = Number(args.qps);
const WRITE_BATCH = 10_000;

let now = Date.now();
const EXPIRES_AT = now + 3_600_000;
const centres = makeCentres(64, DIM);
const queries = Array.from({ length: 200 }, (_, i) => {
  const v = new Float32Array(DIM);
  writeVector(10_000_000 + i, centres, v, 0);
  return v;
});

/** Row i: every (1 + EXPIRING / LIVE)-th row lives on, the rest expire, so both are spread over the data. */
const total = LIVE + EXPIRING;
const stride = total / Math.max(1, LIVE);
const isLive = (i: number): boolean => LIVE > 0 && Math.floor(i / stride) !== Math.floor((i + 1) / stride);

async function load(s: EmbeddedStorage): Promise<number> {
  const t0 = performance.now();
  let live = 0;
  for (let start = 0; start < total; start += WRITE_BATCH) {
    const rows: VectorRow[] = [];
    for (let i = start; i < Math.min(total, start + WRITE_BATCH); i++) {
      const vector = new Float32Array(DIM);
      writeVector(i, centres, vector, 0);
      const keep = isLive(i);
      if (keep) live++;
      rows.push({ key: `r${i}`, vector, metadata: {}, text: null, expiresAt: keep ? null : EXPIRES_AT });
    }
    await s.upsertVectors('bench', 't', rows);
  }
  console.error(`  loaded ${total.toLocaleString('en')} rows (${live.toLocaleString('en')} live) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return live;
}

/**
 * Asks searches at QPS a second, one at a time, until `until()` says stop; answers the latencies in
 * ms. Each is timed from when it was due, as a request from the network would wait: behind a
 * sweep batch under way, or behind the search before it when that one ran late.
 */
async function searchWhile(s: EmbeddedStorage, until: () => boolean): Promise<number[]> {
  const lat: number[] = [];
  const start = performance.now();
  for (let i = 0; !until(); i++) {
    const t0 = start + (i * 1000) / QPS;
    const wait = t0 - performance.now();
    await (wait > 0 ? sleep(wait) : nextTurn());
    const found = await s.search('bench', 't', { vector: queries[i % queries.length], metric: 'cosine', candidates: 100, limit: 10 });
    lat.push(performance.now() - t0);
    if (found.length !== 10) throw new Error(`a search answered ${found.length} rows, not 10`);
  }
  return lat;
}

const rssAnonMb = (): number => Number(/RssAnon:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

const forSeconds = (sec: number): (() => boolean) => {
  const end = performance.now() + sec * 1000;
  return () => performance.now() >= end;
};

async function main(): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-ttl-bench-'));
  const s = await openEmbeddedStorage({
    dataDir: dir,
    // Without --ann every search scans all rows (indexing a million rows here takes many minutes).
    index: { saveEveryChanges: 100_000_000, saveEveryMs: 86_400_000, exactBelowRows: ANN ? 10_000 : 1_000_000_000 },
    clock: () => now,
    // Passes run only when this bench says (sweepExpired), in batches of BATCH_ROWS.
    ttlSweep: { batchRows: BATCH_ROWS, intervalMs: 86_400_000 },
  });
  try {
    await s.createKeyspace({ name: 'bench', owner: null });
    await s.createTable({ keyspace: 'bench', name: 't', dimension: DIM, metric: 'cosine', model: null });
    const live = await load(s);
    const t0 = performance.now();
    await s.whenIndexed();
    console.error(`  indexed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await searchWhile(s, forSeconds(1)); // warm-up

    const phaseLoad: Record<string, number> = {};
    const loadNow = (phase: string) => (phaseLoad[phase] = os.loadavg()[0]);
    loadNow('anchor');
    const anchor = await searchWhile(s, forSeconds(SECONDS));
    const rssLoaded = rssAnonMb();
    now = EXPIRES_AT + 1;
    const firstRead = performance.now();
    if ((await s.countVectors('bench', 't')) !== live) throw new Error('the expired rows are still counted');
    const firstReadMs = performance.now() - firstRead;
    loadNow('hidden');
    const hidden = await searchWhile(s, forSeconds(SECONDS));

    let swept: number | null = null;
    loadNow('removal');
    const sweepStart = performance.now();
    const sweep = s.sweepExpired().then((n) => (swept = n));
    const removal = await searchWhile(s, () => swept !== null);
    await sweep;
    const sweepSeconds = (performance.now() - sweepStart) / 1000;
    const rssSwept = rssAnonMb();
    let indexedAt: number | null = null;
    void s.whenIndexed().then(() => (indexedAt = performance.now()));
    loadNow('after');
    const after = await searchWhile(s, forSeconds(SECONDS));
    const pending = s.indexStatus()[0].pending;

    const line = (name: string, lat: number[]) => {
      const p50 = pct(lat, 50);
      const p99 = pct(lat, 99);
      const a50 = pct(anchor, 50);
      const a99 = pct(anchor, 99);
      return `${name.padEnd(8)} load ${phaseLoad[name].toFixed(1).padStart(5)} ${String(lat.length).padStart(6)} searches  p50 ${p50.toFixed(2).padStart(7)} ms (x${(p50 / a50).toFixed(2)})  p99 ${p99.toFixed(2).padStart(7)} ms (x${(p99 / a99).toFixed(2)})`;
    };
    console.log(`ttl-expiry: ${LIVE.toLocaleString('en')} live + ${EXPIRING.toLocaleString('en')} expiring rows, ${DIM}-d, ${ANN ? 'ANN' : 'exact'} searches at ${QPS}/s, sweep batches of ${BATCH_ROWS}; ratios against the anchor`);
    console.log(line('anchor', anchor));
    console.log(line('hidden', hidden));
    console.log(line('removal', removal));
    console.log(line('after', after));
    console.log(`first read after the expiry: ${firstReadMs.toFixed(0)} ms`);
    console.log(`sweep: ${swept!.toLocaleString('en')} rows in ${sweepSeconds.toFixed(1)} s (${Math.round(swept! / sweepSeconds).toLocaleString('en')} rows/s) while searches ran`);
    if (ANN) console.log(indexedAt !== null ? `graphs caught up ${((indexedAt - sweepStart) / 1000).toFixed(1)} s after the sweep began` : `graphs still re-indexing at the end: ${pending.toLocaleString('en')} rows pending`);
    console.log(`RssAnon: ${rssLoaded.toFixed(0)} MB loaded, ${rssSwept.toFixed(0)} MB after the sweep`);
  } finally {
    await s.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

await main();
