/**
 * The workloads of bench/vectors.bench.ts (same vectors, batches, queries, concurrency), through
 * the real server process and real HTTP, on the Cassandra backend. Needs a running Cassandra 5;
 * `scripts/cassandra/cassandra.sh run` starts one and stops it afterwards:
 *
 *   bash scripts/cassandra/cassandra.sh run -- node --import tsx bench/cassandra.bench.ts --n 100000
 *     [--dim 384] [--queries 200] [--batch 1000] [--contact-points 127.0.0.1] [--keep]
 *
 * Reports: ingest (acknowledged vectors/s; vectors sent as vector_base64), whether the last rows written are found at once,
 * search QPS and p50/p99 at concurrency 1 and 16 for vector queries with initial_top_k 100 and
 * with the default initial_top_k, recall@10 of both against an exact scan computed in this process
 * (on Cassandra above the exact-scan threshold both go through the ANN index: LIMIT 100 and the
 * 1,000 cap), text queries, time to serve after a service restart (Cassandra keeps running), the
 * server's RssAnon and the Cassandra node's RSS. Each run uses a fresh keyspace prefix and system
 * keyspace, dropped at the end unless --keep.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import cassandra from 'cassandra-driver';
import { PROJECT_ROOT } from '../src/config/config.ts';
import { dropPrefixed, freshNames } from '../src/storage/cassandra/test-support.ts';
import { startServer, type RunningServer } from '../test/server.ts';
import { machineKind } from './machine-check.ts';
import { fmt, ingest, makeCentres, makeVectors, pct, restart, rssMb, runQueries, textSearch, writeVector } from './workload.ts';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    dim: { type: 'string', default: '384' },
    queries: { type: 'string', default: '200' },
    batch: { type: 'string', default: '1000' },
    'contact-points': { type: 'string', default: '127.0.0.1' },
    keep: { type: 'boolean', default: false },
  },
});
const N = Number(args.n);
const DIM = Number(args.dim);
const QUERIES = Number(args.queries);
const BATCH = Number(args.batch);
const CONTACT_POINTS = args['contact-points']!;
const KEY = 'bench-admin-key-0123456789abcdef';
const KS = 'default_keyspace';
const TABLE = 'bench';

async function load(server: RunningServer, centres: Float32Array[]) {
  let lastReport = 0;
  return ingest(server, { n: N, dim: DIM, batch: BATCH, keyspace: KS, table: TABLE, encoding: 'base64' }, centres, (sent, seconds) => {
    if (seconds - lastReport < 30) return;
    lastReport = seconds;
    console.error(`  ... ${sent.toLocaleString('en')} rows sent, ${(sent / seconds).toFixed(0)} rows/s`);
  });
}

/** Exact top-10 keys by cosine (the vectors are unit length: dot product), and the time per query. */
function exactTop10(vectors: Float32Array, queries: Float32Array[], dim: number): { keys: string[][]; ms: number } {
  const t0 = performance.now();
  const keys = queries.map((q) => {
    const best = new Float64Array(10).fill(-Infinity);
    const idx = new Int32Array(10).fill(-1);
    for (let r = 0, off = 0; off < vectors.length; r++, off += dim) {
      let dot = 0;
      for (let d = 0; d < dim; d++) dot += vectors[off + d] * q[d];
      if (dot > best[9]) {
        let j = 9;
        while (j > 0 && best[j - 1] < dot) { best[j] = best[j - 1]; idx[j] = idx[j - 1]; j--; }
        best[j] = dot;
        idx[j] = r;
      }
    }
    return Array.from(idx, (r) => `v${r}`);
  });
  return { keys, ms: (performance.now() - t0) / queries.length };
}


/** RSS of the local node started by scripts/cassandra/cassandra.sh, when there is one. */
async function cassandraRss(): Promise<string> {
  const home = process.env.VSS_CASSANDRA_HOME ?? path.join(PROJECT_ROOT, '.cassandra');
  try {
    const pid = Number((await readFile(path.join(home, 'c1', 'node1', 'cassandra.pid'), 'utf8')).trim());
    return `${(await rssMb(pid, 'VmRSS')).toFixed(0)} MB`;
  } catch {
    return 'n/a (not a node of scripts/cassandra/cassandra.sh)';
  }
}

/** What every search on Cassandra pays first to choose exact scan or ANN: `SELECT key ... LIMIT 10001`, timed directly. */
async function keyScanMs(keyspace: string, table: string): Promise<number> {
  const c = new cassandra.Client({ contactPoints: CONTACT_POINTS.split(','), localDataCenter: 'datacenter1' });
  try {
    await c.connect();
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      let pageState: string | undefined;
      do {
        const rs = await c.execute(`SELECT "key" FROM "${keyspace}"."${table}" LIMIT 10001`, [], { prepare: true, fetchSize: 5000, pageState });
        pageState = rs.pageState ?? undefined;
      } while (pageState);
      times.push(performance.now() - t0);
    }
    return pct(times, 50);
  } finally {
    await c.shutdown();
  }
}

function recallAt10(results: { key: string }[][], truth: string[][]): number {
  let hit = 0;
  for (let i = 0; i < truth.length; i++) {
    const want = new Set(truth[i]);
    hit += results[i].filter((m) => want.has(m.key)).length;
  }
  return hit / (truth.length * 10);
}

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-bench-cassandra-'));
  const names = freshNames();
  const env = {
    VSS_DATA_DIR: dataDir,
    VSS_ADMIN_KEY: KEY,
    VSS_LOG_LEVEL: 'warn',
    VSS_STORAGE: 'cassandra',
    VSS_CASSANDRA_CONTACT_POINTS: CONTACT_POINTS,
    VSS_CASSANDRA_SYSTEM_KEYSPACE: names.systemKeyspace,
    VSS_CASSANDRA_KEYSPACE_PREFIX: names.keyspacePrefix,
  };
  const rows: string[] = [];
  const row = (what: string, value: string) => {
    rows.push(`| ${what} | ${value} |`);
    console.error(`${what}: ${value}`);
  };
  const started = Date.now();
  let server = await startServer(env, 120_000);
  let scanned: Float32Array | undefined;
  try {
    const centres = makeCentres(64, DIM);
    const res = await server.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: TABLE, dimension: DIM, metric: 'cosine' });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));

    const ingest = await load(server, centres);
    row('ingest, acknowledged (vector_base64)', `${Math.round(N / ingest.ackSeconds).toLocaleString('en')} vectors/s (${ingest.ackSeconds.toFixed(1)} s)`);
    // SAI indexes a row as it is written: the last rows acknowledged are searchable at once.
    const last = makeVectors(N - 20, 20, DIM, centres);
    const self = await runQueries(server, last.map((v) => ({ keyspace: KS, table: TABLE, vector: Array.from(v), initial_top_k: 100, final_top_k: 1 })), 1);
    const found = self.results.filter((m: { key: string }[], i: number) => m[0]?.key === `v${N - 20 + i}`).length;
    row('last 20 rows written, found first by their own vector right after ingest', `${found} / 20`);
    row('server RssAnon after ingest', `${(await rssMb(server.child.pid!, 'RssAnon')).toFixed(0)} MB`);
    row('Cassandra node RSS after ingest (heap 1 GB)', await cassandraRss());
    row('plan check per search: key scan of up to 10,001 rows (median of 5)', `${(await keyScanMs(names.keyspacePrefix + KS, TABLE)).toFixed(1)} ms`);

    const qvecs = makeVectors(N + 1_000_000, QUERIES, DIM, centres);
    const annBodies = qvecs.map((v) => ({ keyspace: KS, table: TABLE, vector: Array.from(v), initial_top_k: 100, final_top_k: 10 }));
    const defBodies = qvecs.map((v) => ({ keyspace: KS, table: TABLE, vector: Array.from(v), final_top_k: 10 }));

    await runQueries(server, annBodies.slice(0, 20), 1); // warm-up
    const ann1 = await runQueries(server, annBodies, 1);
    const ann16 = await runQueries(server, annBodies, 16);
    const defCount = Math.min(QUERIES, 100);
    const def1 = await runQueries(server, defBodies.slice(0, defCount), 1);
    const def16 = await runQueries(server, defBodies.slice(0, defCount), 16);

    // Exact answers, computed here over the same vectors.
    const flat = new Float32Array(N * DIM);
    for (let i = 0; i < N; i++) writeVector(i, centres, flat, i * DIM);
    scanned = flat; // written in place and held to the end, as in vectors.bench.ts (plainScanOfLoad)
    const truth = exactTop10(flat, qvecs.slice(0, defCount), DIM);

    row('vector search, initial_top_k 100, concurrency 1', fmt(ann1));
    row('vector search, initial_top_k 100, concurrency 16', fmt(ann16));
    row('recall@10, initial_top_k 100 (ANN LIMIT 100) vs exact', recallAt10(ann1.results.slice(0, defCount), truth.keys).toFixed(4));
    row('vector search, default initial_top_k (ANN LIMIT 1,000, the cap), concurrency 1', fmt(def1));
    row('vector search, default initial_top_k (ANN LIMIT 1,000, the cap), concurrency 16', fmt(def16));
    row('recall@10, default initial_top_k vs exact', recallAt10(def1.results, truth.keys).toFixed(4));
    row('plain float32 scan (JS, one thread, top-10)', `${truth.ms.toFixed(1)} ms per query`);

    if (DIM === 384) {
      const text = await textSearch(server, KS, TABLE);
      row('text search (short query, uncached), initial_top_k 100, concurrency 1', fmt(text.c1));
      row('text search (short query, uncached), initial_top_k 100, concurrency 16', fmt(text.c16));
    }

    // Restart the service (Cassandra keeps running): time to a healthy server.
    const r = await restart(server, env, annBodies.slice(0, 50));
    server = r.server;
    row('ready to serve after a service restart (spawn to healthcheck 200)', `${r.readySeconds.toFixed(2)} s`);
    row('server RssAnon after restart', `${r.rssAnon.toFixed(0)} MB`);
    row('vector search after restart, initial_top_k 100, concurrency 1', fmt(r.searches));
  } finally {
    await server.kill('SIGTERM');
    scanned = undefined;
    await rm(dataDir, { recursive: true, force: true });
    if (!args.keep) await dropPrefixed(CONTACT_POINTS.split(','), 'datacenter1', names.keyspacePrefix);
  }
  console.log(`\nN = ${N.toLocaleString('en')}, dimension ${DIM}, ${machineKind()}, node ${process.version}, whole run ${((Date.now() - started) / 60_000).toFixed(1)} min\n`);
  console.log('| measure | figure |\n|---|---|');
  console.log(rows.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
