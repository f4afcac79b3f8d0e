/**
 * Soak: minutes of steady mixed traffic against a server process, watching its anonymous memory.
 *   node --import tsx bench/soak.bench.ts [--minutes 30] [--rate 20] [--mix 'upload:1,chat:1'] [--smaps]
 * Spawns the server as `npm start` runs it (test/server.ts) on a fresh temp data directory, on
 * 127.0.0.1 only, and sends `--rate` requests a second: text writes, vector writes, text and
 * vector searches, key lookups, uploads of small generated files and extractive chat questions
 * (no chat endpoint); `--mix` sends only the kinds it names, in the shares given, to find which
 * kind makes memory grow. Writes reuse a bounded set of keys and file names, so the stored data stops
 * growing after the first minutes and what keeps growing is the process's own. At most 16 requests
 * are in flight (a tick that finds 16 is counted as skipped), and the run ends after `--minutes`
 * (plus at most a minute for requests still in flight). Each sample line also gives the server's
 * CPU share since the previous one, to show the rate leaves the machine room.
 *
 * RssAnon of the server process is read from /proc/PID/status every 10 s; the report gives start,
 * end and max, and the growth from the sample at 5 minutes (warm caches, full key set) to the
 * end, and the V8 heap in use beside it (from /metrics: a leak in JavaScript shows there, native
 * allocator growth only in RssAnon). `--smaps` adds to each sample the anonymous memory by kind of
 * mapping (bench/smaps.ts: glibc's brk heap and arenas, big and small anonymous mappings, thread
 * stacks) and, at the end, the mappings that grew most after 5 minutes. It only reports: the
 * exit code is non-zero only when the server dies or requests fail.
 */
import http from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { multipart } from '../src/http/testing.ts';
import { startServer } from '../test/server.ts';
import { machineKind } from './machine-check.ts';
import { paragraph } from './text-gen.ts';
import { formatBreakdown, smapsBreakdown, topGrowth, type Breakdown } from './smaps.ts';
import { pct, rssMb } from './workload.ts';

const { values: opts } = parseArgs({ options: { minutes: { type: 'string', default: '30' }, rate: { type: 'string', default: '20' }, mix: { type: 'string' }, smaps: { type: 'boolean', default: false } } });
const MINUTES = Number(opts.minutes);
const RATE = Number(opts.rate);
if (!(MINUTES > 0) || !(RATE > 0 && RATE <= 100)) throw new Error('--minutes must be positive, --rate in (0, 100]');

const ADMIN = 'soak-admin-key-0123456789abcdef';
const KS = 'default_keyspace';
const KEYS = 2000; // distinct keys per table: writes after the first ~2000 overwrite
const FILES = 40; // distinct upload names: later uploads replace earlier ones
const DIM = 64;
const MAX_IN_FLIGHT = 16;
const SAMPLE_MS = 10_000;
const WARM_MS = 5 * 60_000;

let seed = 7;
const rnd = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) / 2 ** 24;
const int = (n: number): number => Math.floor(rnd() * n);
const vector = (): number[] => Array.from({ length: DIM }, () => rnd() - 0.5);
const questions = ['what does the captain do in a storm', 'how is the bread baked', 'who keeps the lighthouse', 'when does the tide turn'];

/** One generated small file: plain text, Markdown or CSV, 1-6 KB. */
function smallFile(i: number): { name: string; content: string } {
  const kind = i % 3;
  const paras = Array.from({ length: 2 + int(6) }, paragraph);
  if (kind === 0) return { name: `note-${i % FILES}.txt`, content: paras.join('\n\n') };
  if (kind === 1) return { name: `page-${i % FILES}.md`, content: paras.map((p, k) => `## Part ${k + 1}\n\n${p}`).join('\n\n') };
  return { name: `rows-${i % FILES}.csv`, content: `id,text\n${paras.map((p, k) => `${k},"${p.replace(/"/g, '""')}"`).join('\n')}\n` };
}

type Kind = 'text write' | 'vector write' | 'text search' | 'vector search' | 'get' | 'upload' | 'chat';
/**
 * Requests per 80 ticks: the steady mix. Model calls are the CPU-heavy ones: a chat question
 * embeds up to 120 sentences, an upload a few dozen chunks.
 */
const STEADY_MIX: [Kind, number][] = [
  ['text write', 14],
  ['vector write', 18],
  ['text search', 14],
  ['vector search', 18],
  ['get', 13],
  ['upload', 2],
  ['chat', 1],
];
const KINDS = new Set<string>(STEADY_MIX.map(([k]) => k));
/** `--mix 'kind:share,...'` in place of the steady mix (kinds as in the report's table). */
function parseMix(spec: string): [Kind, number][] {
  return spec.split(',').map((part) => {
    const at = part.lastIndexOf(':');
    const kind = part.slice(0, at).trim();
    const share = Number(part.slice(at + 1));
    if (!KINDS.has(kind) || !(Number.isInteger(share) && share > 0)) throw new Error(`--mix: "${part}" is not kind:share (kinds: ${[...KINDS].join(', ')})`);
    return [kind as Kind, share];
  });
}
const MIX = opts.mix === undefined ? STEADY_MIX : parseMix(opts.mix);
/** The mix interleaved (each kind spread evenly over the 80 ticks), so no run of one slow kind fills the in-flight slots. */
const SCHEDULE: Kind[] = MIX.flatMap(([k, n]) => Array.from({ length: n }, (_, j) => ({ k, at: (j + 0.5) / n })))
  .sort((a, b) => a.at - b.at)
  .map((x) => x.k);
/** Uploads in flight at most: the server allows a user 4 (VSS_MAX_UPLOADS_PER_USER), more is a 429. */
const MAX_UPLOADS_IN_FLIGHT = 2;

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-soak-'));
const env: Record<string, string> = { VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: ADMIN, VSS_HOST: '127.0.0.1', VSS_LOG_LEVEL: 'warn' };
delete process.env.VSS_CHAT_URL; // extractive answers only
const server = await startServer(env, 300_000);
const pid = server.child.pid!;
let died = false;
let stopping = false;
server.child.once('exit', (code, signal) => {
  if (stopping) return;
  died = true;
  console.error(`server exited (${code ?? signal}) during the soak:\n${server.output().slice(-4000)}`);
});

// Idle sockets are dropped after 10 s, well before the server's keep-alive timeout (Fastify's 72 s):
// Node's agent otherwise keeps a free socket for exactly the server's `Keep-Alive: timeout=72`
// hint, and a request sent on it as the server closes it fails with ECONNRESET (1 in 35,036 before).
const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT, timeout: 10_000 });
function upload(i: number): Promise<number> {
  const f = smallFile(i);
  const { payload, headers } = multipart([
    { name: 'keyspace', value: KS },
    { name: 'table', value: 'soak_files' },
    { name: 'file', filename: f.name, content: f.content },
  ]);
  return new Promise((resolve, reject) => {
    const req = http.request(`${server.url}/v1/embed/`, { method: 'POST', agent, headers: { ...headers, 'content-length': payload.byteLength, 'x-api-key': ADMIN } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

async function send(kind: Kind, i: number): Promise<number> {
  const key = `k${int(KEYS)}`;
  switch (kind) {
    case 'text write':
      return (await server.call('POST', '/v1/vector/write', { keyspace: KS, table: 'soak_text', key, text: paragraph(), metadata: { n: i } })).status;
    case 'vector write':
      return (await server.call('POST', '/v1/vector/write', { keyspace: KS, table: 'soak_vec', key, vector: vector(), metadata: { n: i } })).status;
    case 'text search':
      return (await server.call('POST', '/v1/search/', { keyspace: KS, table: 'soak_text', query: `${questions[i % questions.length]} ${i}`, final_top_k: 5 })).status;
    case 'vector search':
      return (await server.call('POST', '/v1/search/', { keyspace: KS, table: 'soak_vec', vector: vector(), final_top_k: 10 })).status;
    case 'get': {
      const s = (await server.call('POST', '/v1/vector/get', { keyspace: KS, table: i % 2 ? 'soak_text' : 'soak_vec', key, include_vector: false })).status;
      return s === 404 ? 200 : s; // a key not written yet is a correct answer
    }
    case 'upload':
      return upload(i);
    case 'chat':
      return (await server.call('POST', '/v1/chat/', { query: `${questions[i % questions.length]}?`, keyspace: KS })).status;
  }
}

// First rows, so that searches and gets have tables from the first tick.
await send('vector write', 0);
await send('text write', 0);

console.log(`# soak: ${MINUTES} min at ${RATE} req/s, mix ${MIX.map(([k, n]) => `${k}:${n}`).join(',')}, server pid ${pid}, data ${dataDir}`);
console.log(`# machine: ${machineKind()}, node ${process.version}`);

const latencies = new Map<Kind, number[]>(MIX.map(([k]) => [k, []]));
const failures = new Map<string, number>();
let inFlight = 0;
let uploadsInFlight = 0;
let sent = 0;
let skipped = 0;
const samples: { t: number; mb: number; heap: number; smaps?: Breakdown }[] = [];
const t0 = performance.now();
/** CPU seconds (user + system) the server has used: fields 14 and 15 of /proc/PID/stat, in clock ticks. */
const cpuSeconds = async (): Promise<number> => {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
let lastCpu = { t: 0, s: await cpuSeconds() };
/** The server's V8 heap in use and reserved, and its external (Buffer, native-owned) memory, in MB, from /metrics. */
const v8Memory = (): Promise<{ heap: number; heapTotal: number; external: number }> =>
  new Promise((resolve) => {
    http
      .get(`${server.url}/metrics`, { agent, headers: { 'x-api-key': ADMIN } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const metric = (name: string) => Number(new RegExp(`^vss_process_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN) / 2 ** 20;
          resolve({ heap: metric('nodejs_heap_size_used_bytes'), heapTotal: metric('nodejs_heap_size_total_bytes'), external: metric('nodejs_external_memory_bytes') });
        });
      })
      .on('error', () => resolve({ heap: NaN, heapTotal: NaN, external: NaN }));
  });
const sample = async (): Promise<void> => {
  const mb = await rssMb(pid, 'RssAnon').catch(() => NaN);
  const t = (performance.now() - t0) / 1000;
  const cpu = await cpuSeconds();
  const share = t > lastCpu.t ? ((cpu - lastCpu.s) / (t - lastCpu.t)) * 100 : 0;
  lastCpu = { t, s: cpu };
  const v8 = await v8Memory();
  const smaps = opts.smaps ? await smapsBreakdown(pid).catch(() => undefined) : undefined;
  samples.push({ t, mb, heap: v8.heap, smaps });
  const failed = [...failures.values()].reduce((a, b) => a + b, 0);
  console.log(
    `t=${t.toFixed(0)}s RssAnon ${mb.toFixed(1)} MB (V8 heap ${v8.heap.toFixed(1)} of ${v8.heapTotal.toFixed(1)}, external ${v8.external.toFixed(1)}), server CPU ${share.toFixed(0)}% of a core, ${sent} sent, ${skipped} skipped, ${failed} failed`,
  );
  if (smaps) console.log(`  anon MB: ${formatBreakdown(smaps)}`);
};
await sample();
const sampler = setInterval(() => void sample(), SAMPLE_MS);

const total = Math.round(MINUTES * 60 * RATE);
const tick = 1000 / RATE;
for (let i = 1; i <= total && !died; i++) {
  // Steady rate: each request at its own time, whatever the previous ones took.
  const wait = t0 + i * tick - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const kind = SCHEDULE[i % SCHEDULE.length];
  if (inFlight >= MAX_IN_FLIGHT || (kind === 'upload' && uploadsInFlight >= MAX_UPLOADS_IN_FLIGHT)) {
    skipped++;
    continue;
  }
  inFlight++;
  if (kind === 'upload') uploadsInFlight++;
  sent++;
  const start = performance.now();
  void send(kind, i)
    .then((status) => {
      if (status === 200) latencies.get(kind)!.push(performance.now() - start);
      else failures.set(`${kind} ${status}`, (failures.get(`${kind} ${status}`) ?? 0) + 1);
    })
    .catch((e: Error) => failures.set(`${kind} ${e.message}`, (failures.get(`${kind} ${e.message}`) ?? 0) + 1))
    .finally(() => {
      inFlight--;
      if (kind === 'upload') uploadsInFlight--;
    });
}
const drainBy = performance.now() + 60_000;
while (inFlight > 0 && performance.now() < drainBy && !died) await new Promise((r) => setTimeout(r, 100));
clearInterval(sampler);
await sample();

const mbs = samples.map((s) => s.mb);
const warm = samples.find((s) => s.t * 1000 >= WARM_MS) ?? samples[0];
const end = mbs[mbs.length - 1];
console.log('\n| request | ok | p50 ms | p99 ms |\n|---|---|---|---|');
for (const [kind, xs] of latencies) console.log(`| ${kind} | ${xs.length} | ${xs.length ? pct(xs, 50).toFixed(1) : '-'} | ${xs.length ? pct(xs, 99).toFixed(1) : '-'} |`);
console.log(`\nfailed: ${failures.size === 0 ? 'none' : [...failures].map(([k, n]) => `${k} ×${n}`).join(', ')}; skipped ticks (16 in flight): ${skipped}`);
console.log(
  `RssAnon MB: start ${mbs[0].toFixed(1)}, at ${(warm.t / 60).toFixed(1)} min ${warm.mb.toFixed(1)}, end ${end.toFixed(1)}, max ${Math.max(...mbs).toFixed(1)}; ` +
    `growth after the first 5 minutes ${(((end - warm.mb) / warm.mb) * 100).toFixed(1)}%`,
);
// The floors (lowest sample) around 5 minutes and over the last 5: memory held, without the tensors of model calls in flight at a sample.
const floor = (from: number, to: number): number => Math.min(...samples.filter((s) => s.t >= from && s.t <= to).map((s) => s.mb));
const lastT = samples[samples.length - 1].t;
const warmFloor = floor(WARM_MS / 1000 - 60, WARM_MS / 1000 + 60);
const endFloor = floor(lastT - 300, lastT);
console.log(`RssAnon floor MB (lowest sample): minutes 4-6 ${warmFloor.toFixed(1)}, last 5 minutes ${endFloor.toFixed(1)}; growth ${(((endFloor - warmFloor) / warmFloor) * 100).toFixed(1)}%`);
const endHeap = samples[samples.length - 1].heap;
console.log(`V8 heap used MB: at ${(warm.t / 60).toFixed(1)} min ${warm.heap.toFixed(1)}, end ${endHeap.toFixed(1)}, max ${Math.max(...samples.map((x) => x.heap)).toFixed(1)}`);
if (opts.smaps && warm.smaps) {
  const max = samples.reduce((a, b) => (b.mb > a.mb ? b : a));
  for (const [label, s] of [[`max (${(max.t / 60).toFixed(1)} min)`, max], ['end', samples[samples.length - 1]]] as const) {
    if (!s.smaps) continue;
    console.log(`mappings that grew most from ${(warm.t / 60).toFixed(1)} min to ${label}:`);
    for (const line of topGrowth(warm.smaps, s.smaps, 8)) console.log(line);
  }
}
console.log(`sent ${sent} requests in ${((performance.now() - t0) / 1000).toFixed(0)} s (${(sent / ((performance.now() - t0) / 1000)).toFixed(1)} a second)`);

stopping = true;
await server.kill('SIGTERM');
agent.destroy();
await rm(dataDir, { recursive: true, force: true });
process.exit(died || failures.size > 0 ? 1 : 0);
