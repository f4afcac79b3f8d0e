/**
 * Time from process spawn to the first `GET /v1/healthcheck/` 200 (model loaded), on an empty data
 * directory (or `--data-dir`, e.g. one kept by `vectors.bench.ts --keep`), as `npm start` runs
 * the server.
 *   node --import tsx bench/startup.bench.ts [--runs 5] [--warmup 1] [--entry scripts/start.mjs] [--data-dir <dir>]
 * `--entry src/main.ts` (any `.ts`) runs the sources through tsx instead. One unmeasured warm-up
 * start comes first (it may rebuild the bundle; its time is printed apart). Each run gets a fresh
 * VSS_DATA_DIR (or the `--data-dir` given, left in place) and a free port; the healthcheck is polled every 10 ms. RssAnon is read from
 * /proc/<pid>/status right after the first 200, and the CPU time (user + system) until then of the
 * process and of its main thread, which other load on the machine disturbs less than the wall time.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PROJECT_ROOT } from '../src/config/config.ts';
import { benchArgs } from './lib/args.ts';

const { runs: RUNS, entry: ENTRY, warmup: WARMUP, 'data-dir': DATA_DIR } = benchArgs({ runs: 5, entry: 'scripts/start.mjs', warmup: 1, 'data-dir': '' });

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });

/**
 * CPU time (user + system) in ms of the process, or of its main thread (`/proc/<pid>/task/<pid>`):
 * steadier than wall time on a shared machine. The main thread's is the start's critical path.
 */
const cpuMs = (pid: number, mainThreadOnly = false): number => {
  const stat = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
};
const CLOCK_TICKS = 100; // sysconf(_SC_CLK_TCK) on Linux

const rssAnonMiB = (pid: number): number => {
  const m = /RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

async function once(): Promise<{ ms: number; cpu: number; mainCpu: number; rssAnon: number }> {
  const dataDir = DATA_DIR || mkdtempSync(path.join(os.tmpdir(), 'vss-startup-'));
  const port = await freePort();
  const nodeArgs = ENTRY.endsWith('.ts') ? ['--import', 'tsx', ENTRY] : [ENTRY];
  const t0 = performance.now();
  const child = spawn(process.execPath, nodeArgs, {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      VSS_DATA_DIR: dataDir,
      VSS_PORT: String(port),
      VSS_ADMIN_KEY: 'bench-admin-key-0123456789abcdef',
      VSS_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => ((exited = true), resolve())));
  try {
    const url = `http://127.0.0.1:${port}/v1/healthcheck/`;
    for (;;) {
      if (exited) throw new Error(`server exited before healthy:\n${out}`);
      const status = await fetch(url).then((r) => (r.body?.cancel(), r.status), () => 0);
      if (status === 200) break;
      if (performance.now() - t0 > 60_000) throw new Error(`not healthy in 60 s:\n${out}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const ms = performance.now() - t0;
    return { ms, cpu: cpuMs(child.pid!), mainCpu: cpuMs(child.pid!, true), rssAnon: rssAnonMiB(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await exit;
    if (!DATA_DIR) rmSync(dataDir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

for (let i = 0; i < WARMUP; i++) {
  const w = await once();
  console.log(`warm-up: ${w.ms.toFixed(0)} ms (not counted)`);
}
const ms: number[] = [];
const cpu: number[] = [];
const mainCpu: number[] = [];
const rss: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const r = await once();
  ms.push(r.ms);
  cpu.push(r.cpu);
  mainCpu.push(r.mainCpu);
  rss.push(r.rssAnon);
  console.log(`run ${i + 1}: ${r.ms.toFixed(0)} ms (CPU ${r.cpu.toFixed(0)} ms, main thread ${r.mainCpu.toFixed(0)} ms), RssAnon ${r.rssAnon.toFixed(1)} MiB`);
}
console.log(
  `${ENTRY}: spawn → healthcheck 200, ${RUNS} runs: median ${median(ms).toFixed(0)} ms, ` +
    `min ${Math.min(...ms).toFixed(0)}, max ${Math.max(...ms).toFixed(0)}; CPU median ${median(cpu).toFixed(0)} ms ` +
    `(main thread ${median(mainCpu).toFixed(0)} ms); ` +
    `RssAnon median ${median(rss).toFixed(1)} MiB`,
);
