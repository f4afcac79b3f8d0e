/**
 * The Cassandra backend against Cassandra itself, in one run: the same rows and the same queries
 * sent straight through cassandra-driver (the engine, no service) and through the real server
 * process over HTTP (the service), side by side, with the service/engine ratios. Needs a running
 * Cassandra 5 (`scripts/cassandra/cassandra.sh start`, or a cluster with the flags below):
 *
 *   node --import tsx bench/cassandra.bench.ts --rows 10000,100000
 *     [--dim 384] [--queries 200] [--batch 500] [--writers 3] [--engine-inflight 24]
 *     [--contact-points 127.0.0.1,127.0.0.2,127.0.0.3 --rf 3 --consistency QUORUM] [--keep]
 *     [--load-only | --reuse PREFIX] [--server-cpu-prof DIR]
 *
 * Per table size: ingest (rows/s; the service takes `writers` batch requests at a time, each written
 * with up to 32 rows in flight; the engine writes `engine-inflight` single-row INSERTs at a time;
 * the rows in three slices, engine and service taking turns);
 * vector search c1 p50/p99 and c16 QPS (engine: `SELECT key, similarity_cosine(vector, ?) ... ORDER BY
 * vector ANN OF ? LIMIT 10`, and LIMIT 100; service: initial_top_k 100, final_top_k 10, the
 * vector sent as JSON numbers and as vector_base64) with recall@10 against an exact scan done here; filtered
 * searches at 1% and 10% selectivity (matches returned of 10, latency); text search (engine: the
 * model in this process, then one ANN query; service: /v1/search with `query`). Where the c1 time
 * goes: beside the engine's `LIMIT 10`, the service's own stage-1 CQL through the driver (`LIMIT 10`
 * with metadata and text) and the storage layer's search called in this process (no HTTP), all
 * taking turns with the service. Both sides write
 * the same columns (key, vector, metadata, terms) into tables of the same schema and indexes (both
 * made by the service). Each run uses a fresh keyspace prefix, dropped at the end unless --keep.
 * Absolute figures depend on the machine: read the ratios. Every load request is retried with
 * backoff for up to 10 minutes when the node drops connections or times out (the writes are
 * idempotent upserts), so a busy shared node slows a run down instead of ending it.
 *
 * Large tables in two steps: `--load-only` creates and loads the tables (ingest figures only),
 * keeps them and prints their keyspace prefix; `--reuse PREFIX` then measures the searches on them
 * (no ingest) and drops them unless --keep. So a long load can run apart from the searches' timing.
 * `--server-cpu-prof DIR`: the server process writes a V8 CPU profile there when it stops.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import cassandra from 'cassandra-driver';
import { DEFAULT_MODEL, PROJECT_ROOT } from '../src/config/config.ts';
import { loadModel } from '../src/embedding/model.ts';
import { openCassandraStorage } from '../src/storage/cassandra/cassandra-storage.ts';
import { metadataTerms } from '../src/storage/cassandra/filter-terms.ts';
import { dropPrefixed, freshNames } from '../src/storage/cassandra/test-support.ts';
import { startServer, type RunningServer } from '../test/server.ts';
import { machineKind } from './machine-check.ts';
import { makeCentres, makeVectors, pct, runQueries, type Timed, vectorField, writeVector } from './workload.ts';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000,100000' },
    dim: { type: 'string', default: '384' },
    queries: { type: 'string', default: '200' },
    batch: { type: 'string', default: '500' },
    writers: { type: 'string', default: '3' },
    'engine-inflight': { type: 'string', default: '24' },
    'contact-points': { type: 'string', default: '127.0.0.1' },
    'local-dc': { type: 'string', default: 'datacenter1' },
    rf: { type: 'string', default: '1' },
    consistency: { type: 'string', default: 'QUORUM' },
    keep: { type: 'boolean', default: false },
    'load-only': { type: 'boolean', default: false },
    reuse: { type: 'string' },
    'server-cpu-prof': { type: 'string' },
  },
});
const SIZES = args.rows!.split(',').map(Number);
const DIM = Number(args.dim);
const QUERIES = Number(args.queries);
const BATCH = Number(args.batch);
const WRITERS = Number(args.writers);
const ENGINE_INFLIGHT = Number(args['engine-inflight']);
const CONTACT_POINTS = args['contact-points']!.split(',').map((s) => s.trim());
const LOCAL_DC = args['local-dc']!;
const RF = Number(args.rf);
const CONSISTENCY = args.consistency as 'QUORUM' | 'ONE' | 'LOCAL_QUORUM';
const KEY = 'bench-admin-key-0123456789abcdef';
const KS = 'bench';
const LOAD_ONLY = args['load-only']!;
const REUSE = args.reuse;
if (LOAD_ONLY && REUSE !== undefined) throw new Error('--load-only and --reuse exclude each other');

const metadataOf = (i: number) => ({ i, p1: i % 100, p10: i % 10 });

type Side = Timed & { matches?: number };
const fmt = (r: Side): string => `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, ${r.qps.toFixed(0)} QPS${r.matches !== undefined ? `, ${r.matches.toFixed(1)} of 10 matches` : ''}`;

/** Runs `f(i)` for i < n with `concurrency` in flight: latencies, QPS. */
async function timed(n: number, concurrency: number, f: (i: number) => Promise<number | void>): Promise<Side & { returned: number[] }> {
  const lat: number[] = [];
  const returned: number[] = new Array(n).fill(0);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const s = performance.now();
        returned[i] = (await f(i)) ?? 0;
        lat.push(performance.now() - s);
      }
    }),
  );
  return { qps: n / ((performance.now() - t0) / 1000), p50: pct(lat, 50), p99: pct(lat, 99), returned };
}

/**
 * Runs `f` (idempotent), retrying with backoff (0.5 s doubling to 30 s) when it throws, for up to
 * 10 minutes: a shared node busy indexing timed writes out for over a minute at a time.
 */
async function withRetries<T>(what: string, f: () => Promise<T>): Promise<T> {
  const giveUpAt = Date.now() + 10 * 60_000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (err) {
      if (Date.now() > giveUpAt) throw err;
      const wait = Math.min(30_000, 500 * 2 ** (attempt - 1));
      console.error(`${what}: ${(err as Error).message.slice(0, 200)}; retry ${attempt} in ${wait} ms`);
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

const ROUNDS = 3;
/** Runs each of `fs` once per round, in turn, ROUNDS times: their results by f. */
async function interleaved(fs: (() => Promise<Timed>)[]): Promise<Timed[][]> {
  const out: Timed[][] = fs.map(() => []);
  for (let r = 0; r < ROUNDS; r++) for (let i = 0; i < fs.length; i++) out[i].push(await fs[i]());
  return out;
}

/** Per-round figures, each taken as the median of the rounds. */
const median = (xs: Timed[]): Timed => ({ p50: pct(xs.map((x) => x.p50), 50), p99: pct(xs.map((x) => x.p99), 50), qps: pct(xs.map((x) => x.qps), 50) });

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-bench-cassandra-'));
  const names = REUSE !== undefined ? { keyspacePrefix: REUSE, systemKeyspace: `${REUSE}sys` } : freshNames();
  const physical = `"${names.keyspacePrefix}${KS}"`;
  const env = {
    VSS_DATA_DIR: dataDir,
    VSS_ADMIN_KEY: KEY,
    VSS_LOG_LEVEL: 'warn',
    VSS_STORAGE: 'cassandra',
    VSS_CASSANDRA_CONTACT_POINTS: CONTACT_POINTS.join(','),
    VSS_CASSANDRA_LOCAL_DC: LOCAL_DC,
    VSS_CASSANDRA_REPLICATION: `{'class': 'SimpleStrategy', 'replication_factor': ${RF}}`,
    VSS_CASSANDRA_CONSISTENCY: CONSISTENCY,
    VSS_CASSANDRA_SYSTEM_KEYSPACE: names.systemKeyspace,
    VSS_CASSANDRA_KEYSPACE_PREFIX: names.keyspacePrefix,
  };
  const cl = cassandra.types.consistencies;
  const writeCl = CONSISTENCY === 'ONE' ? cl.one : CONSISTENCY === 'LOCAL_QUORUM' ? cl.localQuorum : cl.quorum;
  // Cassandra 5 runs top-K (ANN) queries at ONE only, as the service does (session.ts).
  const annCl = CONSISTENCY === 'LOCAL_QUORUM' ? cl.localOne : cl.one;
  const client = new cassandra.Client({ contactPoints: CONTACT_POINTS, localDataCenter: LOCAL_DC });
  const lines: string[] = [];
  const out = (what: string, engine: string, service: string, ratio: string) => {
    lines.push(`| ${what} | ${engine} | ${service} | ${ratio} |`);
    console.error(`${what}: engine ${engine}; service ${service}; ${ratio}`);
  };
  const started = Date.now();
  const profDir = args['server-cpu-prof'];
  const server = await startServer(env, 120_000, undefined, profDir !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []);
  // The same storage the server runs, in this process: its search without HTTP (the c1 breakdown).
  const storage = await openCassandraStorage({
    contactPoints: CONTACT_POINTS,
    localDc: LOCAL_DC,
    replication: env.VSS_CASSANDRA_REPLICATION,
    writeConsistency: CONSISTENCY,
    systemKeyspace: names.systemKeyspace,
    keyspacePrefix: names.keyspacePrefix,
  });
  const centres = makeCentres(64, DIM);
  const model = await loadModel(path.join(PROJECT_ROOT, 'models'), DEFAULT_MODEL, { threads: 1 });
  try {
    await client.connect();
    if (REUSE === undefined) {
      const ks = await server.call('POST', '/v1/keyspaces/create', { keyspace: KS });
      if (ks.status !== 200) throw new Error(JSON.stringify(ks.body));
    }
    for (const n of SIZES) {
      const engineTable = `engine_${n}`;
      const serviceTable = `service_${n}`;
      lines.push(`| **${n.toLocaleString('en')} rows** | | | |`);
      // Reused tables were made long ago (see the catalog wait below).
      const createdAt = REUSE !== undefined ? 0 : Date.now();
      if (REUSE === undefined) await load(n, engineTable, serviceTable);
      if (!LOAD_ONLY) await searches(n, engineTable, serviceTable, createdAt);
    }
  } finally {
    await model.dispose();
    await storage.close();
    await server.kill('SIGTERM');
    await client.shutdown();
    await rm(dataDir, { recursive: true, force: true });
    // A failed drop (an overloaded node) is reported, not thrown: it would hide why the run failed.
    if (!args.keep && !LOAD_ONLY) await dropPrefixed(CONTACT_POINTS, LOCAL_DC, names.keyspacePrefix).catch((err) => console.error(`could not drop the keyspaces ${names.keyspacePrefix}*:`, err));
  }
  if (LOAD_ONLY) console.log(`\nloaded and kept: --reuse ${names.keyspacePrefix}`);
  console.log(`\ndimension ${DIM}, ${CONTACT_POINTS.length} contact point(s), RF ${RF}, ${CONSISTENCY}, ${machineKind()}, node ${process.version}, whole run ${((Date.now() - started) / 60_000).toFixed(1)} min\n`);
  console.log('| measure | engine (cassandra-driver) | service (HTTP) | service / engine |\n|---|---|---|---|');
  console.log(lines.join('\n'));

  /** Creates both tables and loads the same `n` rows into each: the ingest figures. */
  async function load(n: number, engineTable: string, serviceTable: string) {
    for (const table of [engineTable, serviceTable]) {
      const res = await server.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table, dimension: DIM, metric: 'cosine' });
      if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    }
    // Ingest: the same rows, in ROUNDS slices, the engine and the service taking turns (so that
    // neither side is measured only while the shared machine is busier); rates over all slices.
    const insert = `INSERT INTO ${physical}."${engineTable}" ("key", "vector", "metadata", "text", "terms") VALUES (?, ?, ?, ?, ?)`;
    const batches = Math.ceil(n / BATCH);
    let eSeconds = 0;
    let sSeconds = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const [b0, b1] = [Math.floor((r * batches) / ROUNDS), Math.floor(((r + 1) * batches) / ROUNDS)];
      const [r0, r1] = [b0 * BATCH, Math.min(n, b1 * BATCH)];
      const e = await timed(r1 - r0, ENGINE_INFLIGHT, async (j) => {
        const i = r0 + j;
        const [v] = makeVectors(i, 1, DIM, centres);
        const m = metadataOf(i);
        await withRetries(`engine insert v${i}`, () =>
          client.execute(insert, [`v${i}`, new cassandra.types.Vector(v, 'float'), JSON.stringify(m), null, metadataTerms(m)], { prepare: true, consistency: writeCl }),
        );
      });
      eSeconds += (r1 - r0) / e.qps;
      const s = await timed(b1 - b0, WRITERS, async (j) => {
        const start = (b0 + j) * BATCH;
        const vectors = makeVectors(start, Math.min(BATCH, n - start), DIM, centres).map((v, i) => ({ key: `v${start + i}`, ...vectorField(v, 'base64'), metadata: metadataOf(start + i) }));
        await withRetries(`service batch at ${start}`, async () => {
          const res = await server.call('POST', '/v1/vector/batch', { keyspace: KS, table: serviceTable, vectors });
          if (res.status !== 200) throw new Error(`batch at ${start}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        });
      });
      sSeconds += (b1 - b0) / s.qps;
    }
    const eRate = n / eSeconds;
    const sRate = n / sSeconds;
    out('ingest (rows/s)', `${eRate.toFixed(0)} (${ENGINE_INFLIGHT} rows in flight)`, `${sRate.toFixed(0)} (${WRITERS} batches of ${BATCH} in flight)`, `${(sRate / eRate).toFixed(2)}× (target ≥ 0.9×)`);
  }

  /** Vector, filtered and text searches on the loaded tables, engine and service in turns. */
  async function searches(n: number, engineTable: string, serviceTable: string, createdAt: number) {
    // Vector search.
    const qvecs = makeVectors(n + 1_000_000, QUERIES, DIM, centres);
    const ann = (table: string, limit: number, where = '') =>
      `SELECT "key", similarity_cosine("vector", ?) AS s FROM ${physical}."${table}"${where} ORDER BY "vector" ANN OF ? LIMIT ${limit}`;
    const engineSearch = async (limit: number, concurrency: number, terms: (i: number) => string[] = () => []) =>
      timed(QUERIES, concurrency, async (i) => {
        const v = new cassandra.types.Vector(qvecs[i], 'float');
        const t = terms(i);
        const where = t.length > 0 ? ` WHERE ${t.map(() => '"terms" CONTAINS ?').join(' AND ')}` : '';
        const rs = await client.execute(ann(engineTable, limit, where), [v, ...t, v], { prepare: true, consistency: annCl });
        return rs.rowLength;
      });
    const bodies = (filter?: (i: number) => object, encoding: 'json' | 'base64' = 'json') =>
      qvecs.map((v, i) => ({ keyspace: KS, table: serviceTable, ...vectorField(v, encoding), initial_top_k: 100, final_top_k: 10, ...(filter ? { filter: filter(i) } : {}) }));
    await engineSearch(10, 4);
    await runQueries(server, bodies().slice(0, 50), 4); // warm-up
    // Engine and service take turns, ROUNDS times; each figure is the median of its rounds, so
    // that neither side is measured only while the shared machine is busier.
    // The service both ways a client can send the query vector: JSON numbers and vector_base64
    // (binary, as the engine's driver sends it).
    const [e1r, e1xr, s1r, s1br] = await interleaved([() => engineSearch(10, 1), () => engineSearch(100, 1), () => runQueries(server, bodies(), 1), () => runQueries(server, bodies(undefined, 'base64'), 1)]);
    const [e16r, e16xr, s16r, s16br] = await interleaved([
      () => engineSearch(10, 16),
      () => engineSearch(100, 16),
      () => runQueries(server, bodies(), 16),
      () => runQueries(server, bodies(undefined, 'base64'), 16),
    ]);
    const [e1, e1x, s1, s1b, e16, e16x, s16, s16b] = [e1r, e1xr, s1r, s1br, e16r, e16xr, s16r, s16br].map(median);
    // Where the service's c1 time goes: its own stage-1 CQL through the driver, then the storage
    // layer in this process (catalog, memos, decoding), against the engine's LIMIT 10 and HTTP.
    const serviceCql = `SELECT "key", similarity_cosine("vector", ?) AS s, "metadata", "text" FROM ${physical}."${serviceTable}" ORDER BY "vector" ANN OF ? LIMIT 10`;
    const ownCql = () =>
      timed(QUERIES, 1, async (i) => {
        const v = new cassandra.types.Vector(qvecs[i], 'float');
        return (await client.execute(serviceCql, [v, v], { prepare: true, consistency: annCl, fetchSize: 10 })).rowLength;
      });
    const inProcess = () => timed(QUERIES, 1, async (i) => (await storage.search(KS, serviceTable, { vector: qvecs[i], metric: 'cosine', candidates: 100, limit: 10 })).length);
    // A process that did not create a table reads its catalog row per call for its first two
    // minutes (catalog.ts, SETTLED_MS); the server created it, this process did not: wait that out.
    await new Promise((r) => setTimeout(r, Math.max(0, createdAt + 125_000 - Date.now())));
    await inProcess();
    const [bE, bCql, bStore, bHttp] = (await interleaved([() => engineSearch(10, 1), ownCql, inProcess, () => runQueries(server, bodies(), 1)])).map(median);
    out(
      'c1 p50 breakdown: engine LIMIT 10 / service CQL (LIMIT 10, metadata, text) / storage.search in process / HTTP',
      `${bE.p50.toFixed(1)} / ${bCql.p50.toFixed(1)} ms`,
      `${bStore.p50.toFixed(1)} / ${bHttp.p50.toFixed(1)} ms`,
      `${(bCql.p50 / bE.p50).toFixed(2)}× / ${(bStore.p50 / bE.p50).toFixed(2)}× / ${(bHttp.p50 / bE.p50).toFixed(2)}×`,
    );
    const s1results = (s1r[0] as unknown as { results: { key: string }[][] }).results;
    const two = (a: number, b: number, digits: number) => `${a.toFixed(digits)} / ${b.toFixed(digits)}`;
    out('vector search c1 p50 (engine LIMIT 10 / LIMIT 100; service JSON / vector_base64)', `${two(e1.p50, e1x.p50, 1)} ms`, `${two(s1.p50, s1b.p50, 1)} ms`, `${two(s1.p50 / e1.p50, s1b.p50 / e1.p50, 2)}× of LIMIT 10 (target ≤ 2×)`);
    out('vector search c1 p99', `${two(e1.p99, e1x.p99, 1)} ms`, `${two(s1.p99, s1b.p99, 1)} ms`, `${two(s1.p99 / e1.p99, s1b.p99 / e1.p99, 2)}×`);
    out('vector search c16 QPS', two(e16.qps, e16x.qps, 0), two(s16.qps, s16b.qps, 0), `${two(s16.qps / e16.qps, s16b.qps / e16.qps, 2)}× of LIMIT 10 (target ≥ 0.5×)`);

    const flat = new Float32Array(n * DIM);
    for (let i = 0; i < n; i++) writeVector(i, centres, flat, i * DIM);
    const truth = qvecs.map((q) => {
      const scored: [number, number][] = [];
      for (let r = 0; r < n; r++) {
        let dot = 0;
        for (let d = 0; d < DIM; d++) dot += flat[r * DIM + d] * q[d];
        scored.push([dot, r]);
      }
      return new Set(scored.sort((a, b) => b[0] - a[0]).slice(0, 10).map(([, r]) => `v${r}`));
    });
    const recallService = mean(s1results.map((m: { key: string }[], i: number) => m.filter((x) => truth[i].has(x.key)).length / 10));
    const eKeys = await Promise.all(
      qvecs.slice(0, 50).map(async (q) => {
        const v = new cassandra.types.Vector(q, 'float');
        return (await client.execute(ann(engineTable, 10), [v, v], { prepare: true, consistency: annCl })).rows.map((r) => r.key as string);
      }),
    );
    const recallEngine = mean(eKeys.map((k, i) => k.filter((x) => truth[i].has(x)).length / 10));
    out('recall@10 against an exact scan', recallEngine.toFixed(3), recallService.toFixed(3), '');

    // Filtered search: 1% (p1 = i % 100) and 10% (p10 = i % 10).
    for (const [field, mod, label] of [['p1', 100, '1%'], ['p10', 10, '10%']] as const) {
      const value = (i: number) => (i * 7) % mod;
      const ef = await engineSearch(10, 1, (i) => metadataTerms({ [field]: value(i) }).filter((t) => t.includes('=')));
      const sf = await runQueries(server, bodies((i) => ({ [field]: value(i) })), 1);
      const sMatches = mean(sf.results.map((m: { metadata: Record<string, number> }[], i: number) => m.filter((x) => x.metadata[field] === value(i)).length));
      out(`filtered search ${label}, c1`, fmt({ ...ef, matches: mean(ef.returned) }), fmt({ ...sf, matches: sMatches }), `${(sf.p50 / ef.p50).toFixed(2)}× p50`);
    }

    // Text search: the model call and one engine query, against the service's.
    if (DIM === model.dimension) {
      const texts = ['what is a vector database', 'cheap flights to lisbon', 'how to bake sourdough bread', 'kitten sleeping on a couch', 'rust borrow checker error'];
      const text = (i: number, salt: string) => `${texts[i % texts.length]} ${salt}${n}-${i}`;
      const engineText = (salt: string, concurrency: number) =>
        timed(100, concurrency, async (i) => {
          const { vectors } = await model.embed([text(i, salt)]);
          const v = new cassandra.types.Vector(vectors[0], 'float');
          return (await client.execute(ann(engineTable, 10), [v, v], { prepare: true, consistency: annCl })).rowLength;
        });
      const serviceText = (salt: string, concurrency: number) =>
        runQueries(server, Array.from({ length: 100 }, (_, i) => ({ keyspace: KS, table: serviceTable, query: text(i, salt), initial_top_k: 100, final_top_k: 10 })), concurrency);
      const et1 = await engineText('e', 1);
      const st1 = await serviceText('s', 1);
      const et16 = await engineText('E', 16);
      const st16 = await serviceText('S', 16);
      out('text search c1 (model + query)', fmt(et1), fmt(st1), `${(st1.p50 / et1.p50).toFixed(2)}× p50`);
      out('text search c16', fmt(et16), fmt(st16), `${(st16.qps / et16.qps).toFixed(2)}× QPS`);
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
