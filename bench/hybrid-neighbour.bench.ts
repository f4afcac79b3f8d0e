/**
 * What one client's lexical searches of the commonest words do to another's hybrid searches on the
 * same server: hybrid at concurrency 1 alone, then beside a neighbour sending lexical searches of
 * the 1 and the 64 commonest words at concurrency 2 (one thread holds every table's posting lists;
 * such a search reads most of a table's postings), over hybrid.bench's rows.
 *
 *   node --import tsx bench/hybrid-neighbour.bench.ts --data-dir DIR [--n 1000000] [--queries 200] [--anchor DIR]
 *
 * --data-dir: a data directory hybrid.bench loaded (`--fast-load --data-dir DIR --load-only`), only
 * searched here. --anchor DIR: a checkout of the code to compare with (node_modules linked), whose
 * server then searches the same directory, after this checkout's, in the same run.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startServer, type RunningServer } from '../test/server.ts';
import { fmtCheck, MachineChecker, machineKind } from './machine-check.ts';
import { BENCH_KEY as KEY, BENCH_KEYSPACE as KS, BENCH_TABLE as TABLE, queriesOver, vocab } from './hybrid-data.ts';
import { makeCentres, pct, runQueries } from './workload.ts';

const { values: args } = parseArgs({
  options: {
    'data-dir': { type: 'string' },
    n: { type: 'string', default: '1000000' },
    queries: { type: 'string', default: '200' },
    anchor: { type: 'string' },
  },
});
if (args['data-dir'] === undefined) throw new Error('--data-dir DIR: a data directory hybrid.bench loaded');
const N = Number(args.n);
const Q = Number(args.queries);
const NEIGHBOURS = 2;

const centres = makeCentres(64, 384);
const { vectors: qv, texts: qt } = queriesOver(N, Q, 384, centres);
const base = { keyspace: KS, table: TABLE, initial_top_k: 100, final_top_k: 10 };
const hybrid = qv.map((v, i) => ({ ...base, vector: Array.from(v), query: qt[i], mode: 'hybrid' }));
const lexical = qt.map((query) => ({ ...base, query, mode: 'lexical' }));

const rows: string[] = [];
const row = (name: string, value: string) => {
  rows.push(`| ${name} | ${value} |`);
  console.error(`${name}: ${value}`);
};

async function listsAnswer(server: RunningServer): Promise<boolean> {
  const res = await fetch(`${server.url}/metrics`, { headers: { 'x-api-key': KEY } });
  return new RegExp(`vss_lexical_posting_lists\\{keyspace="${KS}",table="${TABLE}"\\} 1`).test(await res.text());
}

/** Two turns of the hybrid searches at concurrency 1 while `neighbour` words are searched lexically at concurrency 2 (none: alone). */
async function beside(server: RunningServer, neighbour: number): Promise<string> {
  let stop = false;
  const took: number[] = [];
  const body = { ...base, query: vocab.slice(0, neighbour).join(' '), mode: 'lexical' };
  const neighbours =
    neighbour === 0
      ? []
      : Array.from({ length: NEIGHBOURS }, async () => {
          while (!stop) {
            const t = performance.now();
            const res = await server.call('POST', '/v1/search/', body);
            if (res.status !== 200) throw new Error(`neighbour: ${res.status}`);
            took.push(performance.now() - t);
          }
        });
  try {
    if (neighbour > 0) await new Promise((r) => setTimeout(r, 200));
    const turns = [await runQueries(server, hybrid, 1), await runQueries(server, hybrid, 1)];
    const them = neighbour === 0 ? '' : `; the neighbour's searches: ${took.length}, p50 ${pct(took, 50).toFixed(0)} ms`;
    return `p50 ${turns.map((t) => t.p50.toFixed(2)).join(' / ')} ms, p99 ${turns.map((t) => t.p99.toFixed(1)).join(' / ')} ms${them}`;
  } finally {
    stop = true;
    await Promise.all(neighbours);
  }
}

async function main(): Promise<void> {
  row('machine', machineKind());
  const machine = new MachineChecker();
  const servers: [string, string | undefined][] = [['', undefined], ...(args.anchor ? [['anchor: ', path.resolve(args.anchor)] as [string, string]] : [])];
  for (const [who, root] of servers) {
    const server = await startServer({ VSS_DATA_DIR: path.resolve(args['data-dir']!), VSS_ADMIN_KEY: KEY }, 900_000, root);
    try {
      // The first lexical search starts building the table's lists; FTS5 answers until they are built.
      const t0 = performance.now();
      while (!(await listsAnswer(server))) await runQueries(server, lexical.slice(0, 20), 1);
      row(`${who}posting lists answering after`, `${((performance.now() - t0) / 1000).toFixed(0)} s`);
      for (let i = 0; i < 2; i++) await runQueries(server, hybrid, 1);
      row(`${who}machine check before the searches`, fmtCheck(machine.check()));
      row(`${who}hybrid, concurrency 1, alone`, await beside(server, 0));
      for (const common of [1, 64]) row(`${who}hybrid, concurrency 1, beside lexical searches of the ${common === 1 ? 'commonest word' : `${common} commonest words`} at concurrency ${NEIGHBOURS}`, await beside(server, common));
    } finally {
      await server.kill('SIGTERM');
    }
  }
  console.log(`\n| ${N.toLocaleString('en')} rows, ${Q} hybrid queries | value |\n|---|---|\n${rows.join('\n')}`);
}

await main();
