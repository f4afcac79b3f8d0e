/**
 * What the vector benchmarks share: the synthetic data (deterministic clustered unit vectors:
 * embeddings cluster, and uniform noise would flatter nothing), batched ingest through the HTTP
 * API, and timed searches at a given concurrency.
 */
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { encodeFloat32Base64 } from '../src/platform/float32-base64.ts';
import { startServer, type RunningServer } from '../test/server.ts';

/** Unit vectors `start .. start+count-1`, each near one of `centres`: the same for the same index. */
export function makeVectors(start: number, count: number, dim: number, centres: Float32Array[]): Float32Array[] {
  const out: Float32Array[] = [];
  for (let i = start; i < start + count; i++) {
    const v = new Float32Array(dim);
    writeVector(i, centres, v, 0);
    out.push(v);
  }
  return out;
}

/**
 * Vector `i` of makeVectors written into `into` at `offset`: fills a large array without an
 * object per vector (a million small arrays leave the collector work for whatever runs next).
 */
export function writeVector(i: number, centres: Float32Array[], into: Float32Array, offset: number): void {
  let s = (i * 2654435761) >>> 0 || 1;
  const c = centres[i % centres.length];
  const dim = c.length;
  let norm = 0;
  for (let d = 0; d < dim; d++) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    const x = Math.fround(c[d] + ((s / 2 ** 32) - 0.5) * 0.6);
    into[offset + d] = x;
    norm += x * x;
  }
  norm = Math.sqrt(norm);
  for (let d = 0; d < dim; d++) into[offset + d] /= norm;
}

export function makeCentres(k: number, dim: number): Float32Array[] {
  let s = 12345;
  return Array.from({ length: k }, () => {
    const c = new Float32Array(dim);
    for (let d = 0; d < dim; d++) {
      s ^= s << 13; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
      c[d] = (s / 2 ** 32) - 0.5;
    }
    return c;
  });
}

/**
 * Writes a buffer of `mb` MB, a byte per cache line, each time it is called: what the server's
 * other threads do to the caches between two searches, for a bench timing one search in process.
 */
export function cacheEvictor(mb: number): () => void {
  const buffer = new Uint8Array(mb * 2 ** 20);
  return () => {
    for (let i = 0; i < buffer.length; i += 64) buffer[i]++;
  };
}

export const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

/** How write records carry their vectors: `vector` (JSON numbers) or `vector_base64` (float32 bytes). */
export type WireEncoding = 'json' | 'base64';
export const WIRE_ENCODINGS: readonly WireEncoding[] = ['json', 'base64'];

/** A write record's vector field in the given encoding. */
export const vectorField = (v: Float32Array, encoding: WireEncoding): { vector: number[] } | { vector_base64: string } =>
  encoding === 'base64' ? { vector_base64: encodeFloat32Base64(v) } : { vector: Array.from(v) };

export interface Workload {
  n: number;
  dim: number;
  batch: number;
  keyspace: string;
  table: string;
  /** How the batches carry their vectors. */
  encoding: WireEncoding;
}

/** Hands out rows 0..n-1 in batches to `writers` concurrent senders; resolves when every `send` has. */
export async function inBatches(n: number, batch: number, writers: number, send: (start: number, count: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < n) {
        const start = next;
        const count = Math.min(batch, n - start);
        next += count;
        await send(start, count);
      }
    }),
  );
}

/** Sends every vector in batches from two writers; resolves when all are acknowledged. */
export async function ingest(server: RunningServer, w: Workload, centres: Float32Array[], progress?: (sent: number, seconds: number) => void) {
  const { n: N, dim: DIM, batch: BATCH, keyspace: KS, table: TABLE, encoding } = w;
  const t0 = performance.now();
  await inBatches(N, BATCH, 2, async (start, count) => {
    const vectors = makeVectors(start, count, DIM, centres).map((v, i) => ({ key: `v${start + i}`, ...vectorField(v, encoding), metadata: { i: start + i } }));
    const res = await server.call('POST', '/v1/vector/batch', { keyspace: KS, table: TABLE, vectors });
    if (res.status !== 200) throw new Error(`batch at ${start}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    progress?.(start + count, (performance.now() - t0) / 1000);
  });
  return { ackSeconds: (performance.now() - t0) / 1000, t0 };
}

/** Rows of `keyspace`.`table` still waiting for the ANN index, from the keyspace listing. */
export async function pendingRows(server: RunningServer, keyspace: string, table: string): Promise<number> {
  const list = await server.call('GET', '/v1/keyspaces/list');
  const t = list.body.keyspaces.find((k: { keyspace: string }) => k.keyspace === keyspace).tables.find((x: { table: string }) => x.table === table);
  return t.pending_rows ?? 0;
}

/** The server's Prometheus text (`key` may read /metrics). */
export async function serverMetrics(server: RunningServer, key: string): Promise<string> {
  return (await fetch(`${server.url}/metrics`, { headers: { 'x-api-key': key } })).text();
}

/** The milliseconds the server spent in /v1/search/ so far, from its metrics text. */
export function searchMsIn(metrics: string): number {
  const sum = metrics.match(/^vss_http_request_duration_seconds_sum\{[^}]*route="\/v1\/search\/"[^}]*\} (\S+)$/m);
  return sum ? Number(sum[1]) * 1000 : 0;
}

export async function runQueries(server: RunningServer, bodies: object[], concurrency: number) {
  const lat: number[] = [];
  const results: any[] = new Array(bodies.length);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < bodies.length) {
        const i = next++;
        const s = performance.now();
        const res = await server.call('POST', '/v1/search/', bodies[i]);
        lat.push(performance.now() - s);
        if (res.status !== 200) throw new Error(`search: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        results[i] = res.body.matches;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { qps: bodies.length / seconds, p50: pct(lat, 50), p99: pct(lat, 99), results, lat, seconds };
}


export type Timed = { qps: number; p50: number; p99: number };

export const fmt = (r: Timed): string => `${r.qps.toFixed(0)} QPS, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`;

/**
 * A process's resident memory from /proc, in MB: RssAnon (heap and other anonymous memory),
 * RssFile (file pages it maps, e.g. memory-mapped index graphs) or VmRSS (all).
 */
export async function rssMb(pid: number, field: 'RssAnon' | 'RssFile' | 'VmRSS'): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

/** MB of the process's file mappings mapped in 2 MiB pages (see copyFileDigested in src/platform/file-digest.ts). */
export async function filePmdMappedMb(pid: number): Promise<number> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
  const m = /FilePmdMapped:\s+(\d+) kB/.exec(rollup);
  return m ? Number(m[1]) / 1024 : NaN;
}

/**
 * Short text queries (uncached: each text is new) at concurrency 1 and 16. The bench tables hold
 * synthetic 384-d vectors, so these are valid (same dimension) though meaningless.
 */
export async function textSearch(server: RunningServer, keyspace: string, table: string, salt = ''): Promise<{ c1: Timed; c16: Timed }> {
  const texts = ['what is a vector database', 'cheap flights to lisbon', 'how to bake sourdough bread', 'kitten sleeping on a couch', 'rust borrow checker error'];
  const bodies = Array.from({ length: 100 }, (_, i) => ({ keyspace, table, query: `${texts[i % texts.length]} ${salt}${i}`, initial_top_k: 100, final_top_k: 10 }));
  const c1 = await runQueries(server, bodies, 1);
  const c16 = await runQueries(server, bodies.map((b) => ({ ...b, query: `${b.query} again` })), 16);
  return { c1, c16 };
}

/**
 * Stops the server gracefully, starts it again with the same settings, and measures what a
 * restart costs: seconds to a healthy server, its RssAnon, and the first vector searches.
 */
export async function restart(server: RunningServer, env: Record<string, string>, bodies: object[]) {
  await server.kill('SIGTERM');
  const t0 = performance.now();
  const next = await startServer(env, 300_000);
  const readySeconds = (performance.now() - t0) / 1000;
  const rssAnon = await rssMb(next.child.pid!, 'RssAnon');
  const searches = await runQueries(next, bodies, 1);
  return { server: next, readySeconds, rssAnon, searches };
}

/**
 * CPU seconds a process has used (/proc/<pid>/stat's utime + stime): all its threads, or only
 * thread `tid` (a Node process's main thread has the process's id).
 */
export async function cpuSeconds(pid: number, tid?: number): Promise<number> {
  const stat = await readFile(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Seconds thread `tid` (default: a Node process's main thread, whose id is the process's) has so
 * far spent ready to run but waiting for a core (/proc/<pid>/task/<tid>/schedstat, second field).
 */
export async function waitedForCoreSeconds(pid: number, tid = pid): Promise<number> {
  return Number((await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8')).split(' ')[1]) / 1e9;
}

/** Page faults of a process so far that had to read from disk (/proc/<pid>/stat's majflt). */
export async function majorFaults(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[9]);
}

/**
 * Waits until `pid` used under 2% of a core more than `idle` (what it uses at rest: see
 * idleCpu) in each of two seconds running (at most `maxSeconds`); the seconds waited.
 */
export async function quiet(pid: number, maxSeconds: number, idle = 0): Promise<number> {
  const t0 = performance.now();
  let calm = 0;
  while (calm < 2 && performance.now() - t0 < maxSeconds * 1000) {
    const before = await cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, 1_000));
    calm = (await cpuSeconds(pid)) - before < 0.02 + idle ? calm + 1 : 0;
  }
  return (performance.now() - t0) / 1000;
}

/**
 * The share of a core `pid` uses over two seconds, read at rest (a server just started) as the
 * floor quiet() measures from: V8's sampling profiler (--cpu-prof) alone takes 4-6% of a core, so
 * a profiled server never went under 2% and each wait ran to its limit.
 */
export async function idleCpu(pid: number): Promise<number> {
  const before = await cpuSeconds(pid);
  await new Promise((r) => setTimeout(r, 2_000));
  return ((await cpuSeconds(pid)) - before) / 2;
}

/**
 * Prints `mark <name> <µs>` on stderr for bench/lib/profile-phases.ts, which splits a profiled
 * server's CPU profile by these marks: the profiler's clock is the monotonic one process.hrtime reads.
 */
export function profileMark(what: string): void {
  console.error(`mark ${JSON.stringify(what)} ${process.hrtime.bigint() / 1000n}`);
}
