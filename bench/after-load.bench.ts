/**
 * How a fresh server's search speed recovers after a bulk load: the time from the last
 * acknowledged write to full speed under a stream of searches that never pauses (which is when
 * the service defers its own background work the longest).
 *
 *   node --import tsx bench/after-load.bench.ts [--n 100000] [--seconds 60] [--window 2] [--effort 50:128] [--server-prof DIR]
 *
 * Starts the service on a fresh data directory, writes `--n` clustered 384-d rows through the API
 * (bench/workload.ts, as bench/peers.bench.ts does), then from the last acknowledgement searches
 * at concurrency 1 without pause for `--seconds` (initial_top_k:ef from `--effort`), printing per
 * `--window`: QPS, p50, p99, the service's own time and disk reads (major page faults) per
 * search, and after it the rows still waiting for the graphs and the sealed segments still
 * searched from memory (not yet saved and mapped: the main thread walks them alone), from its API
 * and metrics. Then the anchor, in the same run: once no row waits and the server's threads have
 * used under 2% of a core for two seconds running (the work it defers while searches come, such as
 * copying a new graph file, then done), three windows of the same searches; each window's QPS is
 * reported over their median.
 * `--server-prof DIR` has the server write V8 CPU profiles there and prints a mark at each window's
 * start, for bench/lib/profile-phases.ts to split them by.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startServer, type RunningServer } from '../test/server.ts';
import { benchArgs } from './lib/args.ts';
import { fmtCheck, MachineChecker, machineKind } from './machine-check.ts';
import { idleCpu, ingest, majorFaults, makeCentres, makeVectors, pct, pendingRows, profileMark, quiet, searchMsIn, serverMetrics } from './workload.ts';

const args = benchArgs({ n: 100_000, seconds: 60, window: 2, effort: '50:128', 'server-prof': undefined });
const [K, EF] = args.effort.split(':').map(Number);
if (!(K > 0 && EF > 0)) throw new Error('--effort takes initial_top_k:ef, e.g. 50:128');
const DIM = 384;
const KEY = 'bench-admin-key-0123456789abcdef';
const KS = 'default_keyspace';
const TABLE = 'after_load';

interface Window {
  at: number;
  qps: number;
  p50: number;
  p99: number;
  ownMs: number;
  /** The server's page faults that read from disk, per search. */
  majorFaults: number;
  pending: number;
  /** Sealed segments still searched from memory (vss_index_segments_in_memory) after the window. */
  inMemory: number;
}

/** From the server's metrics: the milliseconds it spent in /v1/search/ so far, and the table's segments still searched from memory. */
async function serverFigures(server: RunningServer): Promise<{ searchMs: number; inMemory: number }> {
  const text = await serverMetrics(server, KEY);
  const inMemory = text.match(new RegExp(`^vss_index_segments_in_memory\\{[^}]*table="${TABLE}"[^}]*\\} (\\S+)$`, 'm'));
  return { searchMs: searchMsIn(text), inMemory: inMemory ? Number(inMemory[1]) : 0 };
}

async function main() {
  const centres = makeCentres(64, DIM);
  const queries = makeVectors(args.n + 1_000_000, 2_000, DIM, centres).map((v) => Array.from(v));
  const machine = new MachineChecker();
  console.error(`start: ${fmtCheck(machine.check())}`);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-after-load-'));
  const prof = args['server-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(args['server-prof'])}`] : [];
  const server = await startServer({ VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: KEY }, 120_000, undefined, prof);
  const idle = prof.length > 0 ? await idleCpu(server.child.pid!) : 0;
  const mark = (what: string) => args['server-prof'] && profileMark(what);
  let next = 0;
  /** Searches one after another for `seconds`. */
  const window = async (seconds: number, at: number, name = `window at ${at.toFixed(1)} s`): Promise<Window> => {
    mark(name);
    const before = (await serverFigures(server)).searchMs;
    const faultsBefore = await majorFaults(server.child.pid!);
    const lat: number[] = [];
    const t0 = performance.now();
    while (performance.now() - t0 < seconds * 1000) {
      const s = performance.now();
      const res = await server.call('POST', '/v1/search/', { keyspace: KS, table: TABLE, vector: queries[next++ % queries.length], final_top_k: 10, initial_top_k: K, ef: EF });
      if (res.status !== 200) throw new Error(`search: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      lat.push(performance.now() - s);
    }
    const qps = lat.length / ((performance.now() - t0) / 1000);
    const after = await serverFigures(server);
    const faults = (await majorFaults(server.child.pid!)) - faultsBefore;
    return { at, qps, p50: pct(lat, 50), p99: pct(lat, 99), ownMs: (after.searchMs - before) / lat.length, majorFaults: faults / lat.length, pending: await pendingRows(server, KS, TABLE), inMemory: after.inMemory };
  };
  try {
    const created = await server.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: TABLE, dimension: DIM, metric: 'cosine' });
    if (created.status !== 200) throw new Error(JSON.stringify(created.body));
    const { ackSeconds } = await ingest(server, { n: args.n, dim: DIM, batch: 1_000, keyspace: KS, table: TABLE, encoding: 'base64' }, centres);
    const series: Window[] = [];
    const t0 = performance.now();
    while (performance.now() - t0 < args.seconds * 1000) series.push(await window(args.window, (performance.now() - t0) / 1000));
    while ((await pendingRows(server, KS, TABLE)) > 0) await new Promise((r) => setTimeout(r, 200));
    const waited = await quiet(server.child.pid!, 180, idle);
    const settled = [];
    for (let i = 0; i < 3; i++) settled.push(await window(args.window, 0, `settled window ${i + 1}`));
    mark('end');
    const anchor = pct(settled.map((w) => w.qps), 50);
    console.error(`end: ${fmtCheck(machine.check())}`);

    console.log(`\nN = ${args.n.toLocaleString('en-US')}, ${DIM}-d, initial_top_k ${K}, ef ${EF}, concurrency 1, acknowledged in ${ackSeconds.toFixed(1)} s; ${machineKind()}, node ${process.version}\n`);
    console.log('| since the last acknowledgement (s) | QPS | over settled | p50 (ms) | p99 (ms) | own time per search (ms) | disk reads (major page faults) per search | after it: rows waiting for the graphs, segments searched from memory |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const w of series) console.log(`| ${w.at.toFixed(1)} | ${w.qps.toFixed(0)} | ${(w.qps / anchor).toFixed(2)} | ${w.p50.toFixed(2)} | ${w.p99.toFixed(2)} | ${w.ownMs.toFixed(2)} | ${w.majorFaults.toFixed(2)} | ${w.pending}, ${w.inMemory} |`);
    const s = settled.find((w) => w.qps === anchor)!;
    console.log(`| settled (median of 3 windows, after the server was quiet: ${waited.toFixed(0)} s) | ${anchor.toFixed(0)} | 1.00 | ${s.p50.toFixed(2)} | ${s.p99.toFixed(2)} | ${s.ownMs.toFixed(2)} | ${s.majorFaults.toFixed(2)} | ${s.pending}, ${s.inMemory} |`);
  } finally {
    await server.kill('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
