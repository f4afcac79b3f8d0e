/**
 * Hybrid search against semantic search on the same rows, through the real server and HTTP.
 *
 *   node --import tsx bench/hybrid.bench.ts [--n 100000] [--dim 384] [--queries 1000] [--block 100] [--baseline DIR]
 *
 * Rows: clustered unit vectors (bench/workload.ts) each with a text of 20-60 words drawn from a
 * 50,000-word vocabulary with Zipf frequencies (a few words in most rows, most words in few), so no
 * model call at ingest. Queries: a vector of the same clusters and 2-5 words of the vocabulary;
 * 1,000 by default, each searched three times in each group (with 200 in turns of their own, a turn
 * at concurrency 16 lasted a fifth of a second at 100,000 rows and its p50 moved by a fifth from run to run).
 * Before the runs, lexical searches are sent while the table's posting lists are built in memory.
 * Reports: write throughput with text (rows/s acknowledged); p50/p99 at concurrency 1 and 16 of
 * semantic (initial_top_k 100), hybrid (the same vector plus the words, default fusion) and lexical
 * (plus hybrid with words past the 1,000 commonest only: what common words cost FTS5), the groups
 * taking turns in blocks of --block queries over three passes of the queries, so the machine's
 * state weighs on all alike, and hybrid's p50 as a ratio of semantic's (also over each half of the
 * rounds: how far it moves within a run); the server's CPU per search at concurrency 16 by thread, and the main thread's time waiting for a core (/proc); the lexical index's size (SQLite's dbstat over the FTS5 tables), per million rows.
 * --baseline DIR: a checkout of the commit before the lexical index (node_modules linked), whose
 * server takes the same writes after this one's, for the write throughput "before".
 * --writes-only (with --baseline): only the write throughput, this checkout and the baseline in
 * four alternating turns (fresh data directories), so load from elsewhere weighs on both alike.
 * --fast-load: the rows are written into the data directory through the storage API in process
 * (bench/hybrid-data.ts; no HTTP), then the server is started again on it and indexes them, and
 * the searches go through HTTP as before: for 1,000,000 rows, whose HTTP ingest takes longer than
 * a bench run should. The write throughput reported is then the in-process one.
 * --data-dir DIR (with --fast-load): keeps the loaded and indexed data directory at DIR (e.g.
 * .bench-data/hybrid-n1000000-d384, git-ignored) and reuses it when its `loaded.json` names the
 * same parameters (a load cut short, with only `loading.json`, goes on from the rows written), so
 * a 1,000,000-row load is paid once; --load-only stops after the load and the
 * graph indexing (run that without the bench lock: the load is not a measured figure).
 * --anchor DIR: a checkout of the code to compare with (node_modules linked): after the load its
 * server is started on a copy of the data directory beside this checkout's, each turn of each group
 * runs on both in turn, and each server's figures and ratios are reported (the same run, the same
 * machine state).
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Database } from '../src/storage/embedded/sqlite-driver.ts';
import { startServer, type RunningServer } from '../test/server.ts';
import { fmtCheck, MachineChecker, machineKind } from './machine-check.ts';
import { BENCH_KEY as KEY, BENCH_KEYSPACE as KS, BENCH_TABLE as TABLE, loadInProcess, queriesOver, rowText, VOCAB_SIZE, vocab } from './hybrid-data.ts';
import { fmt, makeCentres, makeVectors, pct, rssMb, runQueries, vectorField, type Timed } from './workload.ts';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    dim: { type: 'string', default: '384' },
    queries: { type: 'string', default: '1000' },
    baseline: { type: 'string' },
    'writes-only': { type: 'boolean', default: false },
    'fast-load': { type: 'boolean', default: false },
    'data-dir': { type: 'string' },
    'load-only': { type: 'boolean', default: false },
    anchor: { type: 'string' },
    block: { type: 'string', default: '100' },
  },
});
const N = Number(args.n);
const DIM = Number(args.dim);
const QUERIES = Number(args.queries);
const BLOCK = Math.min(QUERIES, Number(args.block));
const BATCH = 1000;

async function ingest(server: RunningServer, table: string, centres: Float32Array[]): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 2 }, async () => {
      while (next < N) {
        const start = next;
        const count = Math.min(BATCH, N - start);
        next += count;
        const vectors = makeVectors(start, count, DIM, centres).map((v, k) => ({ key: `v${start + k}`, ...vectorField(v, 'base64'), text: rowText(start + k), metadata: { i: start + k } }));
        const res = await server.call('POST', '/v1/vector/batch', { keyspace: KS, table, vectors });
        if (res.status !== 200) throw new Error(`batch at ${start}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      }
    }),
  );
  return N / ((performance.now() - t0) / 1000);
}

/** Whether the table's lexical searches are answered from its posting lists (the server's metric); null from a server without that metric. */
async function listsBuilt(s: RunningServer): Promise<boolean | null> {
  const text = await (await fetch(`${s.url}/metrics`, { headers: { 'x-api-key': KEY } })).text();
  const m = new RegExp(`vss_lexical_posting_lists\\{keyspace="${KS}",table="${TABLE}"\\} (\\d)`).exec(text);
  return m === null ? null : m[1] === '1';
}

async function waitIndexed(server: RunningServer, table: string) {
  for (;;) {
    const list = await server.call('GET', '/v1/keyspaces/list');
    const t = list.body.keyspaces.find((k: { keyspace: string }) => k.keyspace === KS).tables.find((x: { table: string }) => x.table === table);
    if (t.pending_rows === undefined || t.pending_rows === 0) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** CPU time so far of each thread of a process, in ms by thread id (/proc: utime + stime, ticks of 10 ms). */
async function threadCpu(pid: number): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    // The fields after the name: state is field 3, utime 14, stime 15.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (f.length > 12) out.set(Number(tid), (Number(f[11]) + Number(f[12])) * 10);
  }
  return out;
}

/** Time the main thread has spent ready to run while no core was free, in ms (/proc schedstat, ns); 0 where there is none. */
async function mainWaited(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').catch(() => '0 0');
  return Number(stat.split(' ')[1]) / 1e6;
}

/**
 * CPU per search of a server's threads over some runs: the main thread (and its time waiting for
 * a core: at c16 it handles every request and is the bound of both modes), its busiest other
 * thread, the rest.
 */
class CpuPerSearch {
  main = 0;
  mainWait = 0;
  byThread = new Map<number, number>();
  searches = 0;
  add(pid: number, before: Map<number, number>, after: Map<number, number>, searches: number, waited: number): void {
    this.searches += searches;
    this.mainWait += waited;
    for (const [tid, ms] of after) {
      const d = ms - (before.get(tid) ?? 0);
      if (tid === pid) this.main += d;
      else this.byThread.set(tid, (this.byThread.get(tid) ?? 0) + d);
    }
  }
  toString(): string {
    const others = [...this.byThread.values()].sort((a, b) => b - a);
    const rest = others.slice(1).reduce((s, x) => s + x, 0);
    const per = (ms: number) => (ms / this.searches).toFixed(2);
    return `${per(this.main + (others[0] ?? 0) + rest)} ms CPU per search: main thread ${per(this.main)} (and ${per(this.mainWait)} waiting for a core), busiest other thread ${per(others[0] ?? 0)}, the rest ${per(rest)}`;
  }
}

type Concurrency = 'c1' | 'c16';

/** A group's searches at one concurrency over every block: latencies pooled, by half of the rounds too. */
class Pooled {
  readonly #lat: { first: number[]; second: number[] } = { first: [], second: [] };
  #seconds = 0;
  add(r: { lat: number[]; seconds: number }, firstHalf: boolean): void {
    this.#lat[firstHalf ? 'first' : 'second'].push(...r.lat);
    this.#seconds += r.seconds;
  }
  p50Of(firstHalf: boolean): number {
    return pct(this.#lat[firstHalf ? 'first' : 'second'], 50);
  }
  timed(): Timed {
    const all = [...this.#lat.first, ...this.#lat.second];
    return { qps: all.length / this.#seconds, p50: pct(all, 50), p99: pct(all, 99) };
  }
}

/** Bytes of the FTS5 tables (and their shadow tables) in the database, from SQLite's dbstat. */
function lexicalBytes(dbFile: string): number {
  const db = new Database(dbFile, { readonly: true });
  try {
    return (db.prepare(`SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name GLOB 'lex_[0-9]*'`).pluck().get() as number) ?? 0;
  } finally {
    db.close();
  }
}

/** Rows/s of a fresh server from `root` (undefined: this checkout) taking the ingest. */
async function writeTurn(root: string | undefined): Promise<number> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'vss-hybrid-writes-'));
  const server = await startServer({ VSS_DATA_DIR: dir, VSS_ADMIN_KEY: KEY, VSS_LOG_LEVEL: 'warn' }, 300_000, root && path.resolve(root));
  try {
    await server.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: TABLE, dimension: DIM, metric: 'cosine' });
    return await ingest(server, TABLE, makeCentres(64, DIM));
  } finally {
    await server.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}

async function writesOnly(baseline: string) {
  const turns: { now: number[]; base: number[] } = { now: [], base: [] };
  for (let turn = 0; turn < 2; turn++) {
    turns.now.push(await writeTurn(undefined));
    turns.base.push(await writeTurn(baseline));
    console.error(`turn ${turn + 1}: this checkout ${turns.now[turn].toFixed(0)} rows/s, baseline ${turns.base[turn].toFixed(0)} rows/s`);
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  console.log(`| write throughput with text, ${N.toLocaleString('en')} rows, ${DIM}-d | rows/s |\n|---|---|`);
  console.log(`| this checkout (turns) | ${turns.now.map((x) => Math.round(x).toLocaleString('en')).join(', ')} |`);
  console.log(`| baseline ${baseline} (turns) | ${turns.base.map((x) => Math.round(x).toLocaleString('en')).join(', ')} |`);
  console.log(`| this checkout / baseline | ${(sum(turns.now) / sum(turns.base)).toFixed(2)} |`);
}

async function main() {
  const rows: string[] = [];
  const row = (what: string, value: string) => {
    rows.push(`| ${what} | ${value} |`);
    console.error(`${what}: ${value}`);
  };
  row('machine', machineKind());
  const machine = new MachineChecker();
  const kept = args['data-dir'] && args['fast-load'] ? path.resolve(args['data-dir']) : undefined;
  const marker = kept && path.join(kept, 'loaded.json');
  const params = JSON.stringify({ n: N, dim: DIM, table: TABLE });
  const reused = marker !== undefined && (await readFile(marker, 'utf8').catch(() => '')) === params;
  // A load cut short (the same parameters in `loading.json`) goes on from the rows it wrote.
  const loading = kept && path.join(kept, 'loading.json');
  const resumed = loading !== undefined && !reused && (await readFile(loading, 'utf8').catch(() => '')) === params;
  if (kept && !reused && !resumed) await rm(kept, { recursive: true, force: true }), await mkdir(kept, { recursive: true });
  if (loading && !reused) await writeFile(loading, params);
  const dataDir = kept ?? (await mkdtemp(path.join(os.tmpdir(), 'vss-hybrid-bench-')));
  const env = { VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: KEY, VSS_LOG_LEVEL: 'warn' };
  const centres = makeCentres(64, DIM);
  let server = await startServer(env, 600_000);
  let anchor: RunningServer | undefined;
  let anchorDir: string | undefined;
  try {
    if (!reused && !resumed) await server.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: TABLE, dimension: DIM, metric: 'cosine' });
    row(`machine check before the ingest`, fmtCheck(machine.check()));
    if (reused) {
      row('data directory', `${dataDir}, loaded and indexed by an earlier run`);
    } else if (args['fast-load']) {
      await server.kill('SIGTERM');
      let shown = 0;
      const writes = await loadInProcess(dataDir, KS, TABLE, N, DIM, centres, resumed, (done) => {
        if (done >= shown + N / 10) console.error(`loaded ${(shown = done).toLocaleString('en')} rows`);
      });
      row(`write throughput with text, in process (${N.toLocaleString('en')} rows, --fast-load)`, `${Math.round(writes).toLocaleString('en')} rows/s`);
      server = await startServer(env, 600_000);
    } else {
      const writes = await ingest(server, TABLE, centres);
      row(`write throughput with text (${N.toLocaleString('en')} rows, batches of ${BATCH}, 2 writers)`, `${Math.round(writes).toLocaleString('en')} rows/s`);
    }
    const indexing = performance.now();
    await waitIndexed(server, TABLE);
    row('graph indexing after the load', `${((performance.now() - indexing) / 1000).toFixed(0)} s`);
    if (marker && !reused) await writeFile(marker, params);
    if (args['load-only']) return;
    if (args.anchor) {
      // The anchor searches a copy of the same rows: copied while no server has them open.
      await server.kill('SIGTERM');
      anchorDir = await mkdtemp(path.join(os.tmpdir(), 'vss-hybrid-anchor-'));
      await cp(dataDir, anchorDir, { recursive: true });
      server = await startServer(env, 600_000);
      anchor = await startServer({ ...env, VSS_DATA_DIR: anchorDir }, 600_000, path.resolve(args.anchor));
      await waitIndexed(server, TABLE);
      await waitIndexed(anchor, TABLE);
    }
    const lex = lexicalBytes(path.join(dataDir, 'vss.db'));
    row('lexical index size', `${(lex / 2 ** 20).toFixed(1)} MiB for ${N.toLocaleString('en')} rows: ${((lex / 2 ** 20) * (1_000_000 / N)).toFixed(0)} MiB per million rows`);

    const { vectors: qv, texts: qt } = queriesOver(N, QUERIES, DIM, centres);
    const base = (_i: number) => ({ keyspace: KS, table: TABLE, initial_top_k: 100, final_top_k: 10 });
    // The same queries with words past the 1,000 commonest only: what the common words cost.
    const rare = qv.map((_, i) => Array.from({ length: 2 + (i % 4) }, (_, k) => vocab[1000 + ((i * 7919 + k * 104729) % (VOCAB_SIZE - 1000))]).join(' '));
    const groups: Record<string, object[]> = {
      semantic: qv.map((v, i) => ({ ...base(i), vector: Array.from(v) })),
      hybrid: qv.map((v, i) => ({ ...base(i), vector: Array.from(v), query: qt[i], mode: 'hybrid' })),
      lexical: qv.map((_, i) => ({ ...base(i), query: qt[i], mode: 'lexical' })),
      'hybrid, rare words only': qv.map((v, i) => ({ ...base(i), vector: Array.from(v), query: rare[i], mode: 'hybrid' })),
    };
    // Warm-up. The first lexical search of a table starts building its posting lists in memory, a
    // slice of rows per turn of their thread (FTS5 answers meanwhile): lexical searches are sent
    // until the server's metric says the lists answer (a server without it: for about the time the
    // build takes, ~1 s per 10,000 rows on a loaded machine), then a few of each group.
    const servers: [string, RunningServer][] = anchor ? [['', server], ['anchor: ', anchor]] : [['', server]];
    for (const [who, s] of servers) {
      const anonBefore = await rssMb(s.child.pid!, 'RssAnon');
      const lists = performance.now();
      for (;;) {
        await runQueries(s, groups.lexical.slice(0, 20), 1);
        const built = await listsBuilt(s);
        if (built === true || (built === null && performance.now() - lists >= Math.max(5_000, N / 10))) break;
        if (performance.now() - lists > 3_600_000) throw new Error(`${who}the posting lists were not built within an hour`);
      }
      row(`${who}posting lists answering, after the first lexical search`, `${((performance.now() - lists) / 1000).toFixed(0)} s`);
      for (const g of Object.values(groups)) await runQueries(s, g.slice(0, 20), 1);
      const lists_mb = (await rssMb(s.child.pid!, 'RssAnon')) - anonBefore;
      row(`${who}posting lists in memory (the server's anonymous memory grown while they were built)`, `${lists_mb.toFixed(0)} MiB: ${((lists_mb * 1_000_000) / N).toFixed(0)} MiB per million rows`);
    }
    row('machine check before the searches', fmtCheck(machine.check()));
    // The groups take turns in blocks of --block queries (each block at concurrency 1, then each at
    // 16), the group order rotating each round and, with an anchor, the servers' order too, over
    // three passes of the queries; each group's p50 and p99 are over all its searches. So every
    // group samples the machine's phases alike: in whole turns of 1,000 queries, minutes apart,
    // semantic's p50 alone moved 1.17-1.93 ms between runs and two identical servers' ratios differed by 0.3.
    const pooled: Record<string, Record<Concurrency, Pooled>> = {};
    const cpu: Record<string, CpuPerSearch> = {};
    for (const [who] of servers) for (const g of Object.keys(groups)) (pooled[who + g] = { c1: new Pooled(), c16: new Pooled() }), (cpu[who + g] = new CpuPerSearch());
    const names = Object.keys(groups);
    const rounds = Math.ceil((3 * QUERIES) / BLOCK);
    for (let round = 0; round < rounds; round++) {
      const from = (round * BLOCK) % QUERIES;
      const order = names.map((_, i) => names[(i + round) % names.length]);
      for (const c of ['c1', 'c16'] as const) {
        for (const name of order) {
          const bodies = groups[name].slice(from, from + BLOCK);
          for (const [who, s] of round % 2 === 0 ? servers : [...servers].reverse()) {
            const before = c === 'c16' ? await threadCpu(s.child.pid!) : null;
            const waitedBefore = c === 'c16' ? await mainWaited(s.child.pid!) : 0;
            pooled[who + name][c].add(await runQueries(s, bodies, c === 'c1' ? 1 : 16), round < rounds / 2);
            if (before) cpu[who + name].add(s.child.pid!, before, await threadCpu(s.child.pid!), bodies.length, (await mainWaited(s.child.pid!)) - waitedBefore);
          }
        }
      }
    }
    for (const [who] of servers) {
      for (const name of Object.keys(groups)) {
        row(`${who}${name}, concurrency 1`, fmt(pooled[who + name].c1.timed()));
        row(`${who}${name}, concurrency 16`, fmt(pooled[who + name].c16.timed()));
        row(`${who}${name}, concurrency 16, the server's CPU`, String(cpu[who + name]));
      }
    }
    for (const [who] of servers) {
      for (const c of ['c1', 'c16'] as const) {
        const [h, s] = [pooled[`${who}hybrid`][c], pooled[`${who}semantic`][c]];
        const halves = `first half of the rounds ${(h.p50Of(true) / s.p50Of(true)).toFixed(2)}, second ${(h.p50Of(false) / s.p50Of(false)).toFixed(2)}`;
        row(`${who}hybrid p50 / semantic p50, concurrency ${c.slice(1)}`, `${(h.timed().p50 / s.timed().p50).toFixed(2)} (${halves})`);
      }
    }
  } catch (e) {
    console.error(`the server's last output:\n${server.output().slice(-4000)}`);
    if (anchor) console.error(`the anchor's last output:\n${anchor.output().slice(-4000)}`);
    throw e;
  } finally {
    await server.kill('SIGTERM');
    await anchor?.kill('SIGTERM');
    if (anchorDir) await rm(anchorDir, { recursive: true, force: true });
  }

  if (args.baseline) {
    const baseDir = await mkdtemp(path.join(os.tmpdir(), 'vss-hybrid-base-'));
    server = await startServer({ ...env, VSS_DATA_DIR: baseDir }, 300_000, path.resolve(args.baseline));
    try {
      await server.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: TABLE, dimension: DIM, metric: 'cosine' });
      row('machine check before the baseline ingest', fmtCheck(machine.check()));
      const writes = await ingest(server, TABLE, centres);
      row(`write throughput with text, baseline ${args.baseline}`, `${Math.round(writes).toLocaleString('en')} rows/s`);
    } finally {
      await server.kill('SIGTERM');
      await rm(baseDir, { recursive: true, force: true });
    }
  }
  if (!kept) await rm(dataDir, { recursive: true, force: true });
  console.log(`\n| ${N.toLocaleString('en')} text rows, ${DIM}-d | value |\n|---|---|\n${rows.join('\n')}`);
}

if (args['writes-only'] && args.baseline) await writesOnly(args.baseline);
else await main();
