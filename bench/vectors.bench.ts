/**
 * End-to-end benchmark of the embedded backend through the real server process and real HTTP.
 *
 *   node --import tsx bench/vectors.bench.ts --n 100000 [--dim 384] [--queries 200] [--encoding base64|json] [--keep]
 *
 * Ingest sends 1,000-vector batches from two writers, each vector as `vector_base64` (float32
 * bytes, the default) or with `--encoding json` as a `vector` array of JSON numbers.
 *
 * Reports: ingest (acknowledged vectors/s; seconds until all are in the ANN index), search QPS
 * and p50/p99 at concurrency 1 and 16 for vector queries with initial_top_k 100 and with the
 * default (exact), recall@10 of the ANN path against exact, text queries, the exact path against
 * a plain float32 scan in this process, time to serve after a restart, and the server's RssAnon;
 * and before the ingest and each group of timed searches, how fast the machine is at that moment
 * (machine-check.ts), to tell a slow row from a slow machine.
 * Figures are printed as markdown; docs/PERFORMANCE.md records them with this command.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startServer, type RunningServer } from '../test/server.ts';
import { benchArgs } from './lib/args.ts';
import { fmtCheck, MachineChecker, machineKind } from './machine-check.ts';
import { filePmdMappedMb, fmt, ingest, makeCentres, makeVectors, restart, rssMb, runQueries, textSearch, WIRE_ENCODINGS, writeVector, type WireEncoding } from './workload.ts';

const args = benchArgs({ n: 100000, dim: 384, queries: 200, batch: 1000, encoding: 'base64', keep: false });
const { n: N, dim: DIM, queries: QUERIES, batch: BATCH } = args;
const ENCODING = args.encoding as WireEncoding;
if (!WIRE_ENCODINGS.includes(ENCODING)) {
  console.error(`--encoding must be one of ${WIRE_ENCODINGS.join(', ')} (got ${args.encoding})`);
  process.exit(2);
}
const KEY = 'bench-admin-key-0123456789abcdef';
const KS = 'default_keyspace';
const TABLE = 'bench';

async function load(server: RunningServer, centres: Float32Array[]) {
  const { ackSeconds, t0 } = await ingest(server, { n: N, dim: DIM, batch: BATCH, keyspace: KS, table: TABLE, encoding: ENCODING }, centres);
  await waitIndexed(server);
  const indexedSeconds = (performance.now() - t0) / 1000;
  return { ackSeconds, indexedSeconds };
}

/** Waits until the ANN index covers every row (and, after a restart, is open). */
async function waitIndexed(server: RunningServer) {
  for (;;) {
    const list = await server.call('GET', '/v1/keyspaces/list');
    const t = list.body.keyspaces.find((k: { keyspace: string }) => k.keyspace === KS).tables.find((x: { table: string }) => x.table === TABLE);
    if (t.pending_rows === undefined || t.pending_rows === 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The loaded vectors, regenerated into one array in this process, and a plain scan of them.
 * They are written in place: a million small arrays left the client collecting through the text
 * row that follows (63-69 collections, 3-5 of them full, 61-229 ms in all inside its 100 timed
 * searches). The caller keeps the array until the last row: freeing it takes a full collection
 * of ~140 ms wherever it lands.
 */
function plainScanOfLoad(centres: Float32Array[], queries: Float32Array[]): { msPerQuery: number; vectors: Float32Array } {
  const vectors = new Float32Array(N * DIM);
  for (let i = 0; i < N; i++) writeVector(i, centres, vectors, i * DIM);
  return { msPerQuery: plainScanMs(vectors, queries, DIM), vectors };
}

function plainScanMs(vectors: Float32Array, queries: Float32Array[], dim: number): number {
  // The yardstick: one pass of float32 dot products and a top-10 selection, in this process.
  const t0 = performance.now();
  for (const q of queries) {
    const best = new Float64Array(10).fill(-Infinity);
    for (let r = 0, off = 0; off < vectors.length; r++, off += dim) {
      let dot = 0;
      for (let d = 0; d < dim; d++) dot += vectors[off + d] * q[d];
      if (dot > best[9]) {
        let j = 9;
        while (j > 0 && best[j - 1] < dot) { best[j] = best[j - 1]; j--; }
        best[j] = dot;
      }
    }
  }
  return (performance.now() - t0) / queries.length;
}


async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-bench-'));
  const env = { VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: KEY, VSS_LOG_LEVEL: 'warn' };
  const rows: string[] = [];
  const row = (what: string, value: string) => {
    rows.push(`| ${what} | ${value} |`);
    console.error(`${what}: ${value}`);
  };
  const machine = new MachineChecker();
  const checkMachine = (before: string) => row(`machine check before ${before} (client, one thread)`, fmtCheck(machine.check()));
  checkMachine('the ingest');
  let server = await startServer(env, 120_000);
  let scanned: Float32Array | undefined; // held to the end: see plainScanOfLoad
  try {
    const centres = makeCentres(64, DIM);
    let res = await server.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: TABLE, dimension: DIM, metric: 'cosine' });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));

    const ingest = await load(server, centres);
    row(`ingest, acknowledged (${ENCODING === 'base64' ? 'vector_base64' : 'vector as JSON numbers'})`, `${Math.round(N / ingest.ackSeconds).toLocaleString('en')} vectors/s (${ingest.ackSeconds.toFixed(1)} s)`);
    row('ingest, until all indexed', `${ingest.indexedSeconds.toFixed(1)} s`);
    row('server RssAnon after ingest', `${(await rssMb(server.child.pid!, 'RssAnon')).toFixed(0)} MB (RssFile ${(await rssMb(server.child.pid!, 'RssFile')).toFixed(0)} MB, of mapped files in 2 MiB pages ${(await filePmdMappedMb(server.child.pid!)).toFixed(0)} MB)`);

    const qvecs = makeVectors(N + 1_000_000, QUERIES, DIM, centres);
    const annBodies = qvecs.map((v) => ({ keyspace: KS, table: TABLE, vector: Array.from(v), initial_top_k: 100, final_top_k: 10 }));
    const exactBodies = qvecs.map((v) => ({ keyspace: KS, table: TABLE, vector: Array.from(v), final_top_k: 10 }));

    await runQueries(server, annBodies.slice(0, 20), 1); // warm-up
    checkMachine('the searches');
    const ann1 = await runQueries(server, annBodies, 1);
    const ann16 = await runQueries(server, annBodies, 16);
    const exactCount = Math.min(QUERIES, N >= 500_000 ? 30 : 100);
    const exact1 = await runQueries(server, exactBodies.slice(0, exactCount), 1);
    const exact16 = await runQueries(server, exactBodies.slice(0, exactCount), 16);
    let hit = 0;
    for (let i = 0; i < exactCount; i++) {
      const truth = new Set(exact1.results[i].map((m: { key: string }) => m.key));
      hit += ann1.results[i].filter((m: { key: string }) => truth.has(m.key)).length;
    }
    const recall = hit / (exactCount * 10);
    row('vector search, initial_top_k 100, concurrency 1', fmt(ann1));
    row('vector search, initial_top_k 100, concurrency 16', fmt(ann16));
    row('recall@10, initial_top_k 100 vs exact', recall.toFixed(4));
    row('vector search, default initial_top_k (exact), concurrency 1', fmt(exact1));
    row('vector search, default initial_top_k (exact), concurrency 16', fmt(exact16));

    const scan = plainScanOfLoad(centres, qvecs.slice(0, Math.min(10, exactCount)));
    scanned = scan.vectors;
    const scanMs = scan.msPerQuery;
    row('plain float32 scan (JS, one thread, top-10)', `${scanMs.toFixed(1)} ms per query; exact search p50 / scan = ${(exact1.p50 / scanMs).toFixed(2)}`);

    if (DIM === 384) {
      checkMachine('the text searches');
      const text = await textSearch(server, KS, TABLE);
      row('text search (short query, uncached), initial_top_k 100, concurrency 1', fmt(text.c1));
      row('text search (short query, uncached), initial_top_k 100, concurrency 16', fmt(text.c16));
    }

    // Restart: graceful stop (indexes saved), then time to a healthy server.
    const r = await restart(server, env, annBodies.slice(0, 50));
    server = r.server;
    row('ready to serve after restart (spawn to healthcheck 200)', `${r.readySeconds.toFixed(2)} s`);
    row('server RssAnon after restart', `${r.rssAnon.toFixed(0)} MB`);
    row('vector search right after restart, initial_top_k 100, concurrency 1', fmt(r.searches));

    // Settled: the restarted server's index is open and caught up, and the machine has had a few
    // seconds without ingest (no writeback of the load's gigabytes, no index saves): the state a
    // long-running server answers from. Fresh queries, so no page of theirs was touched before.
    await waitIndexed(server);
    await new Promise((res) => setTimeout(res, 5000));
    row('server file mappings in 2 MiB pages, settled after restart', `${(await filePmdMappedMb(server.child.pid!)).toFixed(0)} MB`);
    checkMachine('the settled searches');
    const settledQ = makeVectors(N + 3_000_000, QUERIES, DIM, centres).map((v) => ({ keyspace: KS, table: TABLE, vector: Array.from(v), initial_top_k: 100, final_top_k: 10 }));
    row('vector search, settled after restart, initial_top_k 100, concurrency 1', fmt(await runQueries(server, settledQ, 1)));
    if (DIM === 384) {
      const text = await textSearch(server, KS, TABLE, 'settled');
      row('text search, settled after restart (short query, uncached), initial_top_k 100, concurrency 1', fmt(text.c1));
    }
  } finally {
    await server.kill('SIGTERM');
    scanned = undefined;
    if (!args.keep) await rm(dataDir, { recursive: true, force: true });
    else console.error(`data directory kept: ${dataDir}`);
  }
  console.log(`\nN = ${N.toLocaleString('en')}, dimension ${DIM}, write encoding ${ENCODING}, ${machineKind()}, node ${process.version}\n`);
  console.log('| measure | figure |\n|---|---|');
  console.log(rows.join('\n'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
