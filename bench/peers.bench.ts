/**
 * The service against Chroma's own server on the same vectors, in one run.
 *
 *   node --import tsx bench/peers.bench.ts [--n 100000] [--dim 384] [--queries 200] [--curve 10:16,20:64,...] [--skip-chroma]
 *
 * Chroma: chromadb from PyPI (pinned below) in a venv under .bench-data/ that this script creates
 * on first use, started as `chroma run` with a cosine collection and its HNSW defaults, called
 * over plain HTTP (its v2 API) by the same keep-alive client as the service (test/server.ts).
 * Both get the same clustered vectors (bench/workload.ts), written by two writers in batches of
 * 1,000 (the service as vector_base64, Chroma as JSON numbers, each's own best wire format), and
 * the same queries as JSON numbers: the service with initial_top_k 100, final_top_k 10, Chroma
 * with n_results 10.
 *
 * Reports for each: ingest until acknowledged and until searchable at graph speed (the service:
 * no row left waiting for its graphs; Chroma indexes as it writes, so acknowledged), QPS and
 * p50/p99 at concurrency 1 and 16 right after the writes are acknowledged and settled (indexed,
 * then 5 s idle, fresh queries), recall@10 against an exact scan, and the server's VmRSS; then
 * the service's recall-latency curve over pairs of initial_top_k (candidates re-scored exactly)
 * and ef (how wide each graph walk is; never narrower than initial_top_k).
 * The machine is shared: read the ratios, not the absolute figures.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { exactSearch, MetricKind } from 'usearch';
import { jsonCaller, startServer, type RunningServer } from '../test/server.ts';
import { fmtCheck, MachineChecker, machineKind } from './machine-check.ts';
import { fmt, inBatches, ingest, makeCentres, makeVectors, pct, rssMb, writeVector, type Timed } from './workload.ts';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    dim: { type: 'string', default: '384' },
    queries: { type: 'string', default: '200' },
    curve: { type: 'string', default: '10:16,10:64,20:64,20:128,50:64,50:128,100:128,100:256,100:512' },
    'skip-chroma': { type: 'boolean', default: false },
  },
});
const N = Number(args.n);
const DIM = Number(args.dim);
const QUERIES = Number(args.queries);
/** The recall-latency curve's points: initial_top_k and ef. */
const CURVE = args.curve.split(',').map((p) => p.split(':').map(Number) as [number, number]);
const BATCH = 1_000;
const WRITERS = 2;
const CHROMA_VERSION = '1.5.9';
const ROOT = path.resolve(import.meta.dirname, '..');
const VENV = path.join(ROOT, '.bench-data', 'chroma-venv');
const KEY = 'bench-admin-key-0123456789abcdef';
const KS = 'default_keyspace';
const TABLE = 'peers';

type Call = RunningServer['call'];
/** The same queries for both servers: right after the load and settled, with their exact answers. */
interface Queries {
  after: Float32Array[];
  settled: Float32Array[];
  truthAfter: string[][];
  truthSettled: string[][];
}
interface Searches {
  after1: Timed;
  after16: Timed;
  recallAfter: number;
  settled1: Timed;
  settled16: Timed;
  recallSettled: number;
}
interface Side extends Searches {
  ackSeconds: number;
  searchableSeconds: number;
  pendingAtAck: number | null;
  rssMb: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Times `search(i)` over queries 0..count-1 from `concurrency` clients; returns the ids each answered. */
async function timed(count: number, concurrency: number, search: (i: number) => Promise<string[]>): Promise<Timed & { ids: string[][] }> {
  const lat: number[] = [];
  const ids: string[][] = new Array(count);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const s = performance.now();
        ids[i] = await search(i);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { qps: count / ((performance.now() - t0) / 1000), p50: pct(lat, 50), p99: pct(lat, 99), ids };
}

/** Right after the load at concurrency 1 and 16, then `settle()`, then settled on fresh queries. */
async function searchPhases(q: Queries, search: (qs: Float32Array[]) => (i: number) => Promise<string[]>, settle: () => Promise<void>): Promise<Searches> {
  const after1 = await timed(q.after.length, 1, search(q.after));
  const after16 = await timed(q.after.length, 16, search(q.after));
  await settle();
  const settled1 = await timed(q.settled.length, 1, search(q.settled));
  const settled16 = await timed(q.settled.length, 16, search(q.settled));
  return { after1, after16, recallAfter: recallOf(after1.ids, q.truthAfter), settled1, settled16, recallSettled: recallOf(settled1.ids, q.truthSettled) };
}

function recallOf(got: string[][], truth: string[][]): number {
  let hit = 0;
  got.forEach((g, i) => {
    const want = new Set(truth[i]);
    hit += g.filter((k) => want.has(k)).length;
  });
  return hit / (truth.length * 10);
}

/** The exact top 10 keys of each query by cosine (usearch's SIMD scan of all rows). */
function exactTruth(all: Float32Array, queries: Float32Array[]): string[][] {
  return queries.map((q) => {
    const r = exactSearch(all, q, DIM, 10, MetricKind.Cos, 0);
    return Array.from(r.keys, (k) => `v${Number(k)}`);
  });
}

async function runService(centres: Float32Array[], q: Queries, row: (a: string, b: string) => void): Promise<Side> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-peers-'));
  const server = await startServer({ VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: KEY, VSS_LOG_LEVEL: 'warn' }, 120_000);
  try {
    const res = await server.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: TABLE, dimension: DIM, metric: 'cosine' });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    const { ackSeconds, t0 } = await ingest(server, { n: N, dim: DIM, batch: BATCH, keyspace: KS, table: TABLE, encoding: 'base64' }, centres);
    const pendingAtAck = await pending(server);
    const search = (qs: Float32Array[], extra: object = { initial_top_k: 100 }) => async (i: number) => {
      const r = await server.call('POST', '/v1/search/', { keyspace: KS, table: TABLE, vector: Array.from(qs[i]), final_top_k: 10, ...extra });
      if (r.status !== 200) throw new Error(`search: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      return r.body.matches.map((m: { key: string }) => m.key);
    };
    let searchableSeconds = 0;
    const searches = await searchPhases(q, search, async () => {
      while ((await pending(server)) > 0) await sleep(200);
      searchableSeconds = (performance.now() - t0) / 1000;
      await sleep(5_000);
    });
    const side: Side = { ackSeconds, searchableSeconds, pendingAtAck, ...searches, rssMb: await rssMb(server.child.pid!, 'VmRSS') };
    // The recall-latency curve: recall@10 depends on how many candidates are re-scored exactly
    // (the graphs rank by their int8 copies, which swaps near-ties) and on how wide each walk is.
    const curveCount = Math.min(q.settled.length, 100);
    for (const [k, ef] of CURVE) {
      const r = await timed(curveCount, 1, search(q.settled, { initial_top_k: k, ef }));
      row(`service, settled, initial_top_k ${k}, ef ${ef}, concurrency 1`, `recall@10 ${recallOf(r.ids, q.truthSettled.slice(0, curveCount)).toFixed(3)}, ${fmt(r)}`);
    }
    return side;
  } finally {
    await server.kill('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function pending(server: RunningServer): Promise<number> {
  const list = await server.call('GET', '/v1/keyspaces/list');
  const t = list.body.keyspaces.find((k: { keyspace: string }) => k.keyspace === KS).tables.find((x: { table: string }) => x.table === TABLE);
  return t.pending_rows ?? 0;
}

/** The venv with Chroma's server, created on first use (a few minutes: pip fetches its wheels). */
function ensureChroma(): string {
  const bin = path.join(VENV, 'bin', 'chroma');
  if (existsSync(bin)) return bin;
  console.error(`creating ${VENV} with chromadb ${CHROMA_VERSION} ...`);
  for (const [cmd, argv] of [
    ['python3', ['-m', 'venv', VENV]],
    [path.join(VENV, 'bin', 'pip'), ['install', '-q', `chromadb==${CHROMA_VERSION}`]],
  ] as const) {
    const r = spawnSync(cmd, argv, { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed`);
  }
  return bin;
}

async function startChroma(dir: string): Promise<{ child: ChildProcess; call: Call }> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const child = spawn(ensureChroma(), ['run', '--path', dir, '--host', '127.0.0.1', '--port', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const call = jsonCaller(`http://127.0.0.1:${port}`);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const h = await call('GET', '/api/v2/heartbeat').catch(() => ({ status: 0 }));
    if (h.status === 200) return { child, call };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`chroma did not start:\n${err}`);
    await sleep(100);
  }
}

async function runChroma(centres: Float32Array[], q: Queries): Promise<Side> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'chroma-peers-'));
  const { child, call } = await startChroma(dir);
  const base = '/api/v2/tenants/default_tenant/databases/default_database/collections';
  try {
    const created = await call('POST', base, { name: 'peers', configuration: { hnsw: { space: 'cosine' } } });
    if (created.status !== 200) throw new Error(JSON.stringify(created.body));
    const id = created.body.id as string;
    const t0 = performance.now();
    await inBatches(N, BATCH, WRITERS, async (start, count) => {
      const vs = makeVectors(start, count, DIM, centres);
      const body = { ids: vs.map((_, i) => `v${start + i}`), embeddings: vs.map((v) => Array.from(v)), metadatas: vs.map((_, i) => ({ i: start + i })) };
      const r = await call('POST', `${base}/${id}/add`, body);
      if (r.status !== 200 && r.status !== 201) throw new Error(`chroma add at ${start}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    });
    const ackSeconds = (performance.now() - t0) / 1000;
    const search = (qs: Float32Array[]) => async (i: number) => {
      const r = await call('POST', `${base}/${id}/query`, { query_embeddings: [Array.from(qs[i])], n_results: 10, include: ['distances'] });
      if (r.status !== 200) throw new Error(`chroma query: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
      return r.body.ids[0] as string[];
    };
    const searches = await searchPhases(q, search, () => sleep(5_000));
    return { ackSeconds, searchableSeconds: ackSeconds, pendingAtAck: null, ...searches, rssMb: await rssMb(child.pid!, 'VmRSS') };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    await rm(dir, { recursive: true, force: true });
  }
}

async function main() {
  const rows: string[] = [];
  const row = (what: string, value: string) => {
    rows.push(`| ${what} | ${value} |`);
    console.error(`${what}: ${value}`);
  };
  const machine = new MachineChecker();
  row('machine check at the start (client, one thread)', fmtCheck(machine.check()));
  if (!args['skip-chroma']) ensureChroma();
  const centres = makeCentres(64, DIM);
  const all = new Float32Array(N * DIM);
  for (let i = 0; i < N; i++) writeVector(i, centres, all, i * DIM);
  const after = makeVectors(N + 1_000_000, QUERIES, DIM, centres);
  const settled = makeVectors(N + 3_000_000, QUERIES, DIM, centres);
  const q: Queries = { after, settled, truthAfter: exactTruth(all, after), truthSettled: exactTruth(all, settled) };

  const vss = await runService(centres, q, row);
  row('machine check after the service (client, one thread)', fmtCheck(machine.check()));
  const chroma = args['skip-chroma'] ? null : await runChroma(centres, q);
  if (chroma) row('machine check after Chroma (client, one thread)', fmtCheck(machine.check()));

  const side = (name: string, s: Side) => {
    row(`${name}: ingest until acknowledged`, `${Math.round(N / s.ackSeconds).toLocaleString('en')} vectors/s (${s.ackSeconds.toFixed(1)} s)${s.pendingAtAck !== null ? `, ${s.pendingAtAck.toLocaleString('en')} rows not in the graphs yet` : ''}`);
    row(`${name}: ingest until searchable at graph speed`, `${s.searchableSeconds.toFixed(1)} s`);
    row(`${name}: right after the load, concurrency 1`, `${fmt(s.after1)}, recall@10 ${s.recallAfter.toFixed(3)}`);
    row(`${name}: right after the load, concurrency 16`, fmt(s.after16));
    row(`${name}: settled, concurrency 1`, `${fmt(s.settled1)}, recall@10 ${s.recallSettled.toFixed(3)}`);
    row(`${name}: settled, concurrency 16`, fmt(s.settled16));
    row(`${name}: server VmRSS after the searches`, `${s.rssMb.toFixed(0)} MB`);
  };
  side('service', vss);
  row('service: p50 right after / settled, concurrency 1', (vss.after1.p50 / vss.settled1.p50).toFixed(2));
  if (chroma) {
    side('Chroma', chroma);
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    row('service / Chroma: ingest rate until acknowledged', ratio(chroma.ackSeconds, vss.ackSeconds));
    row('service / Chroma: ingest rate until searchable at graph speed', ratio(chroma.searchableSeconds, vss.searchableSeconds));
    row('service / Chroma: QPS right after the load, concurrency 1 / 16', `${ratio(vss.after1.qps, chroma.after1.qps)} / ${ratio(vss.after16.qps, chroma.after16.qps)}`);
    row('service / Chroma: QPS settled, concurrency 1 / 16', `${ratio(vss.settled1.qps, chroma.settled1.qps)} / ${ratio(vss.settled16.qps, chroma.settled16.qps)}`);
  }
  console.log(`\nN = ${N.toLocaleString('en')}, dimension ${DIM}, ${QUERIES} queries per row, Chroma ${args['skip-chroma'] ? 'skipped' : CHROMA_VERSION}, ${machineKind()}, node ${process.version}\n`);
  console.log('| measure | figure |\n|---|---|');
  console.log(rows.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
