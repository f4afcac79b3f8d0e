/**
 * Vector search latency on an existing data directory, in rounds of the same fresh queries, to
 * separate cold costs (graph pages and vector rows read back from disk) from warm ones.
 *
 *   node --import tsx bench/vectors.bench.ts --n 1000000 --keep      # prints the data directory it kept
 *   node --import tsx bench/search-rounds.bench.ts --data-dir <that directory> [--rounds 2] [--queries 300]
 *
 * Starts the server on the directory (as `npm start` does), waits for the index to be open and
 * a few seconds more, then sends `--queries` vector searches (initial_top_k 100, final_top_k 10,
 * concurrency 1) per round to table `bench` of `default_keyspace`.
 */
import { startServer } from '../test/server.ts';
import { benchArgs } from './lib/args.ts';
import { fmt, makeCentres, makeVectors, runQueries } from './workload.ts';

const args = benchArgs({ 'data-dir': undefined, rounds: 2, queries: 300, 'settle-ms': 4000 });
if (!args['data-dir']) throw new Error('--data-dir is required (a directory kept by vectors.bench.ts --keep)');
const KEY = 'bench-admin-key-0123456789abcdef';

const server = await startServer({ VSS_DATA_DIR: args['data-dir'], VSS_ADMIN_KEY: KEY, VSS_LOG_LEVEL: 'warn' }, 120_000);
try {
  for (;;) {
    const list = await server.call('GET', '/v1/keyspaces/list');
    const t = list.body.keyspaces.find((k: { keyspace: string }) => k.keyspace === 'default_keyspace')?.tables.find((x: { table: string }) => x.table === 'bench');
    if (!t) throw new Error('no table default_keyspace.bench in that directory');
    if (!t.pending_rows) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  await new Promise((r) => setTimeout(r, args['settle-ms']));
  const bodies = makeVectors(5_000_000, args.queries, 384, makeCentres(64, 384)).map((v) => ({
    keyspace: 'default_keyspace',
    table: 'bench',
    vector: Array.from(v),
    initial_top_k: 100,
    final_top_k: 10,
  }));
  for (let r = 0; r < args.rounds; r++) console.log(`round ${r + 1}: ${fmt(await runQueries(server, bodies, 1))}`);
} finally {
  await server.kill('SIGTERM');
}
