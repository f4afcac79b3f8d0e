/**
 * Vector search latency on an existing data directory, in rounds, to separate cold costs from
 * warm ones: with the same fresh queries every round (the default), graph pages and vector rows
 * read back from disk; with `--fresh`, new queries every round, the server process's own warm-up
 * (V8 optimises the search path's JavaScript while the first few thousand searches run).
 *
 *   node --import tsx bench/vectors.bench.ts --n 100000 --keep      # prints the data directory it kept
 *   node --import tsx bench/search-rounds.bench.ts --data-dir <that directory> [--rounds 2] [--queries 300] [--fresh] [--effort 100:128] [--pause-ms 0] [--node-args=--no-opt] [--server-out FILE]
 *
 * Starts the server on the directory (as `npm start` does, with `--node-args` given to node),
 * waits for the index to be open and for the server to go quiet, then sends `--queries` vector
 * searches (initial_top_k:ef from `--effort`, final_top_k 10, concurrency 1) per round to table
 * `bench` of `default_keyspace`, printing per round the latency and the server's own time per
 * search (from its metrics: the rest is the client's and the loopback's), and the process's first
 * search on its own. `--pause-ms` leaves the server without a request that long before each round
 * after the first, as a server with few users is between their searches (V8 reclaims memory from a
 * process that goes idle, and the compiled code it discards is compiled again by the next searches).
 * `--server-out FILE` appends what the server writes from the first round on to FILE, each round
 * after a line `=== round N ===`: with `--node-args=--trace-deopt`, which optimised functions bail
 * out in which round (`awk '/^=== round/{r=$3} /bailout/{n[r]++} END{for(r in n) print r, n[r]}' FILE`).
 */
import { createWriteStream } from 'node:fs';
import { startServer } from '../test/server.ts';
import { benchArgs } from './lib/args.ts';
import { machineKind } from './machine-check.ts';
import { fmt, makeCentres, makeVectors, quiet, runQueries, searchMsIn, serverMetrics } from './workload.ts';

const args = benchArgs({ 'data-dir': undefined, rounds: 2, queries: 300, fresh: false, effort: '100:128', 'pause-ms': 0, 'node-args': '', 'server-out': '' });
if (!args['data-dir']) throw new Error('--data-dir is required (a directory kept by vectors.bench.ts --keep)');
const [K, EF] = args.effort.split(':').map(Number);
if (!(K > 0 && EF > 0)) throw new Error('--effort takes initial_top_k:ef, e.g. 100:128');
const KEY = 'bench-admin-key-0123456789abcdef';

const nodeArgs = (args['node-args'] ?? '').split(' ').filter(Boolean);
const server = await startServer({ VSS_DATA_DIR: args['data-dir'], VSS_ADMIN_KEY: KEY, VSS_LOG_LEVEL: 'warn' }, 120_000, undefined, nodeArgs);
// Written as it comes, not synchronously: a V8 trace is megabytes while the rounds are timed.
const serverOut = args['server-out'] ? createWriteStream(args['server-out'], { flags: 'a' }) : null;
try {
  for (;;) {
    const list = await server.call('GET', '/v1/keyspaces/list');
    const t = list.body.keyspaces.find((k: { keyspace: string }) => k.keyspace === 'default_keyspace')?.tables.find((x: { table: string }) => x.table === 'bench');
    if (!t) throw new Error('no table default_keyspace.bench in that directory');
    if (!t.pending_rows) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  // The graphs' first walks and any settling after the start are done before the first round.
  const waited = await quiet(server.child.pid!, 60);
  console.log(`${machineKind()}, node ${process.version}${nodeArgs.length ? ` ${nodeArgs.join(' ')}` : ''}; initial_top_k ${K}, ef ${EF}, ${args.queries} ${args.fresh ? 'new queries each round' : 'queries, the same each round'}${args['pause-ms'] > 0 ? `, ${args['pause-ms']} ms without a request before each round after the first` : ''}; server quiet after ${waited.toFixed(1)} s`);
  const centres = makeCentres(64, 384);
  const bodies = (round: number) =>
    makeVectors(5_000_000 + (args.fresh ? round * args.queries : 0), args.queries, 384, centres).map((v) => ({
      keyspace: 'default_keyspace',
      table: 'bench',
      vector: Array.from(v),
      initial_top_k: K,
      ef: EF,
      final_top_k: 10,
    }));
  if (serverOut) for (const s of [server.child.stdout!, server.child.stderr!]) s.on('data', (d: Buffer) => serverOut.write(d));
  for (let r = 0; r < args.rounds; r++) {
    if (r > 0 && args['pause-ms'] > 0) await new Promise((done) => setTimeout(done, args['pause-ms']));
    serverOut?.write(`\n=== round ${r + 1} ===\n`);
    const before = searchMsIn(await serverMetrics(server, KEY));
    const run = await runQueries(server, bodies(r), 1);
    const own = (searchMsIn(await serverMetrics(server, KEY)) - before) / args.queries;
    // The process's very first search also pays for what is done once, on first use.
    const first = r === 0 ? `, the first search ${run.lat[0].toFixed(1)} ms` : '';
    console.log(`round ${r + 1}: ${fmt(run)}, own time ${own.toFixed(2)} ms a search${first}`);
  }
} finally {
  await server.kill('SIGTERM');
  await new Promise((done) => (serverOut ? serverOut.end(done) : done(undefined)));
}
