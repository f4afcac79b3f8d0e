/**
 * Concurrent searches while writes trickle into the table: how fast they go, and how much of the
 * server's main thread each takes, against the same searches with no write (same server, same run).
 *
 *   node --import tsx bench/search-under-writes.bench.ts [--n 100000] [--rounds 3] [--searches 2000]
 *     [--concurrency 16] [--write-ms 100] [--against DIR]
 *
 * Writes `--n` clustered 384-d rows to a fresh server (bench/workload.ts), waits until they are in
 * the graphs and the server is quiet (its graph files saved), then per round searches
 * (`initial_top_k` 50, `ef` 128, `vector_base64`) `--searches` times from `--concurrency` clients:
 *
 * - quiet: no write;
 * - writing: while one more client writes a new row every `--write-ms`;
 * - after: no write again, the rows written since the last save of the graphs still not in a file;
 *
 * then writes 1,100 rows at once and waits for the server to go quiet, so that the next round
 * starts from saved graphs again. Each phase prints QPS, p50, p99 and the server's CPU time per
 * search on its main thread and on all threads (/proc). `--against DIR` runs the same on a server
 * started from another checkout (e.g. a worktree of the parent commit) after this one's, and prints
 * its table below.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { encodeFloat32Base64 } from '../src/platform/float32-base64.ts';
import { startServer, type RunningServer } from '../test/server.ts';
import { benchArgs } from './lib/args.ts';
import { fmtCheck, MachineChecker, machineKind } from './machine-check.ts';
import { cpuSeconds, ingest, makeCentres, makeVectors, pct, pendingRows, quiet } from './workload.ts';

const args = benchArgs({ n: 100_000, rounds: 3, searches: 2_000, concurrency: 16, 'write-ms': 100, against: undefined });
const DIM = 384;
const KEY = 'bench-admin-key-0123456789abcdef';
const KS = 'default_keyspace';
const TABLE = 'under_writes';

interface Phase {
  round: number;
  name: 'quiet' | 'writing' | 'after';
  qps: number;
  p50: number;
  p99: number;
  /** Server CPU ms per search: its main thread, and all its threads. */
  mainMs: number;
  allMs: number;
  writes: number;
}

async function measure(root: string | undefined, centres: Float32Array[]): Promise<Phase[]> {
  const queries = makeVectors(args.n + 1_000_000, 3_000, DIM, centres).map((v) => encodeFloat32Base64(v));
  let fresh = args.n + 2_000_000;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-under-writes-'));
  const server = await startServer({ VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: KEY }, 120_000, root && path.resolve(root));
  const pid = server.child.pid!;
  const write = async (count: number) => {
    const vectors = makeVectors(fresh, count, DIM, centres).map((v, i) => ({ key: `w${fresh + i}`, vector_base64: encodeFloat32Base64(v) }));
    fresh += count;
    const res = await server.call('POST', '/v1/vector/batch', { keyspace: KS, table: TABLE, vectors });
    if (res.status !== 200) throw new Error(`write: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  };
  const settle = async () => {
    while ((await pendingRows(server, KS, TABLE)) > 0) await new Promise((r) => setTimeout(r, 200));
    await quiet(pid, 120);
  };
  let q = 0;
  const searches = async (): Promise<Omit<Phase, 'round' | 'name' | 'writes'>> => {
    const lat: number[] = [];
    const [main0, all0] = [await cpuSeconds(pid, pid), await cpuSeconds(pid)];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: args.concurrency }, async () => {
        while (next++ < args.searches) {
          const s = performance.now();
          const res = await server.call('POST', '/v1/search/', { keyspace: KS, table: TABLE, vector_base64: queries[q++ % queries.length], final_top_k: 10, initial_top_k: 50, ef: 128 });
          if (res.status !== 200) throw new Error(`search: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
          lat.push(performance.now() - s);
        }
      }),
    );
    const qps = args.searches / ((performance.now() - t0) / 1000);
    const [main1, all1] = [await cpuSeconds(pid, pid), await cpuSeconds(pid)];
    return { qps, p50: pct(lat, 50), p99: pct(lat, 99), mainMs: ((main1 - main0) * 1000) / args.searches, allMs: ((all1 - all0) * 1000) / args.searches };
  };
  try {
    const created = await server.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: TABLE, dimension: DIM, metric: 'cosine' });
    if (created.status !== 200) throw new Error(JSON.stringify(created.body));
    await ingest(server, { n: args.n, dim: DIM, batch: 1_000, keyspace: KS, table: TABLE, encoding: 'base64' }, centres);
    await settle();
    await searches(); // the search path's first runs, compiled before anything is timed
    const out: Phase[] = [];
    for (let round = 1; round <= args.rounds; round++) {
      out.push({ round, name: 'quiet', writes: 0, ...(await searches()) });
      let writing = true;
      let writes = 0;
      const writer = (async () => {
        while (writing) {
          await write(1);
          writes++;
          await new Promise((r) => setTimeout(r, args['write-ms']));
        }
      })();
      // The first writes land before the searches start.
      await new Promise((r) => setTimeout(r, 5 * args['write-ms']));
      const during = await searches();
      writing = false;
      await writer;
      out.push({ round, name: 'writing', writes, ...during });
      await settle();
      out.push({ round, name: 'after', writes: 0, ...(await searches()) });
      await write(1_000); // a batch holds at most 1,000 rows
      await write(100);
      await settle();
    }
    return out;
  } finally {
    await server.kill('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  }
}

function print(title: string, phases: Phase[]): void {
  console.log(`\n${title}\n`);
  console.log('| round | phase | writes | QPS | over quiet | p50 (ms) | p99 (ms) | main thread ms / search | all threads ms / search |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const p of phases) {
    const base = phases.find((x) => x.round === p.round && x.name === 'quiet')!;
    console.log(`| ${p.round} | ${p.name} | ${p.writes} | ${p.qps.toFixed(0)} | ${(p.qps / base.qps).toFixed(2)} | ${p.p50.toFixed(2)} | ${p.p99.toFixed(2)} | ${p.mainMs.toFixed(2)} | ${p.allMs.toFixed(2)} |`);
  }
}

async function main() {
  const centres = makeCentres(64, DIM);
  const machine = new MachineChecker();
  console.error(`start: ${fmtCheck(machine.check())}`);
  const mine = await measure(undefined, centres);
  const theirs = args.against ? await measure(args.against, centres) : null;
  console.error(`end: ${fmtCheck(machine.check())}`);
  const what = `N = ${args.n.toLocaleString('en-US')}, ${DIM}-d, concurrency ${args.concurrency}, a write every ${args['write-ms']} ms while writing; ${machineKind()}, node ${process.version}`;
  print(`this checkout: ${what}`, mine);
  if (theirs) print(`${args.against}: ${what}`, theirs);
}

await main();
