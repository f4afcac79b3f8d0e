/**
 * What onnxruntime keeps of a model's working memory, and what each setting costs in speed: one
 * process per setting (its CPU memory arena on or off; the per-call budget of model.ts on or off;
 * its memory patterns, a cached plan per input shape, on or off; glibc's mmap threshold left
 * dynamic, as `npm start` leaves it, or fixed at 128 KiB by MALLOC_MMAP_THRESHOLD_; the warm-up
 * calls of model.ts's warmUpShapes first or not), all at once so
 * they meet the same machine, each calling the shipped model in a loop with batches of random
 * shapes (1-32 texts of 4-256 tokens, small ones likelier, as a server's mix of queries and
 * upload batches); with the budget, a batch runs as the calls callGroups makes of it. Each
 * reports its RssAnon every tenth of the run (a level line is a high-water mark, a climbing one
 * a leak) and the tokens it embedded per CPU second (ratios against the first row, the current
 * setting, are the speed cost). Every process runs with MALLOC_ARENA_MAX=2, as `npm start`.
 *   node --import tsx bench/model-memory.bench.ts [--seconds 180] [--only 0,3 (rows by index)]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { DEFAULT_MODEL, PROJECT_ROOT } from '../src/config/config.ts';
import { callGroups, DEFAULT_CALL_ATTENTION, DEFAULT_CALL_ROWS, DEFAULT_CALL_TOKENS, readModelInfo, warmUpShapes } from '../src/embedding/model.ts';
import { machineKind } from './machine-check.ts';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '180' }, arena: { type: 'string' }, budget: { type: 'string' }, pattern: { type: 'string' }, warm: { type: 'string' }, only: { type: 'string' } } });
const SECONDS = Number(args.seconds);
// Seeded, so that every setting meets the same sequence of shapes and its tokens per CPU second compare.
let seed = 12345;
const random = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) / 2 ** 24;
const BUDGET = { tokens: DEFAULT_CALL_TOKENS, attention: DEFAULT_CALL_ATTENTION };
let n = 0;
let tokens = 0;
const rssAnonMb = (): number => Number(/RssAnon:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

/** One setting, in this process: the loop, then one line of JSON on stdout. */
async function child(arena: boolean, budget: boolean, pattern: boolean, warm: boolean): Promise<void> {
  const file = path.join(PROJECT_ROOT, 'models', DEFAULT_MODEL, 'onnx', 'model.onnx');
  const session = await InferenceSession.create(file, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all', enableCpuMemArena: arena, enableMemPattern: pattern });
  const opened = rssAnonMb();
  const warmCpu = process.cpuUsage();
  if (warm) for (const { rows, length } of warmUpShapes(BUDGET, (await readModelInfo(path.join(PROJECT_ROOT, 'models'), DEFAULT_MODEL)).maxTokens, DEFAULT_CALL_ROWS)) await call(rows, length);
  const { user, system } = process.cpuUsage(warmCpu);
  const warmUpMs = (user + system) / 1000;
  n = tokens = 0;
  const start = rssAnonMb();
  const samples: number[] = [];
  const t0 = Date.now();
  const cpu0 = process.cpuUsage();
  while (Date.now() - t0 < SECONDS * 1000) {
    const b = 1 + Math.floor(random() ** 2 * 32);
    const l = 4 + Math.floor(random() ** 2 * 252);
    const calls = budget ? callGroups(new Array<number>(b).fill(l), BUDGET).map((g) => g.length) : [b];
    for (const rows of calls) await call(rows, l);
    if (Date.now() - t0 >= ((samples.length + 1) * SECONDS * 1000) / 10) samples.push(rssAnonMb());
  }
  const cpu = process.cpuUsage(cpu0);
  const tokensPerCpuSecond = tokens / ((cpu.user + cpu.system) / 1e6);
  process.stdout.write(`${JSON.stringify({ calls: n, tokensPerCpuSecond, opened, warmUpMs, start, samples })}\n`);

  async function call(b: number, l: number): Promise<void> {
    const ids = BigInt64Array.from({ length: b * l }, () => BigInt(1000 + Math.floor(Math.random() * 20000)));
    const feeds: Record<string, Tensor> = { input_ids: new Tensor('int64', ids, [b, l]), attention_mask: new Tensor('int64', new BigInt64Array(b * l).fill(1n), [b, l]) };
    if (session.inputNames.includes('token_type_ids')) feeds.token_type_ids = new Tensor('int64', new BigInt64Array(b * l), [b, l]);
    await session.run(feeds);
    n++;
    tokens += b * l;
  }
}

interface Setting {
  arena: boolean;
  budget: boolean;
  pattern: boolean;
  /** MALLOC_MMAP_THRESHOLD_ for the process; undefined: glibc's dynamic threshold. */
  mmapThreshold?: number;
  /** glibc.malloc.hugetlb=1: big blocks mapped with transparent huge pages (fewer page faults). */
  hugePages?: boolean;
  /** The calls of model.ts's warmUpShapes first, as a loaded model makes them. */
  warm?: boolean;
}
type Result = Setting & { calls: number; tokensPerCpuSecond: number; opened: number; warmUpMs: number; start: number; samples: number[] };
function run(s: Setting): Promise<Result> {
  const me = fileURLToPath(import.meta.url);
  const onOff = (x: boolean) => (x ? 'on' : 'off');
  const env: NodeJS.ProcessEnv = { ...process.env, MALLOC_ARENA_MAX: '2' };
  if (s.mmapThreshold === undefined) delete env.MALLOC_MMAP_THRESHOLD_;
  else env.MALLOC_MMAP_THRESHOLD_ = String(s.mmapThreshold);
  if (s.hugePages) env.GLIBC_TUNABLES = 'glibc.malloc.hugetlb=1';
  const p = spawn(process.execPath, [...process.execArgv, me, '--seconds', String(SECONDS), '--arena', onOff(s.arena), '--budget', onOff(s.budget), '--pattern', onOff(s.pattern), '--warm', onOff(s.warm ?? false)], { stdio: ['ignore', 'pipe', 'inherit'], env });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => p.on('exit', (code) => (code === 0 ? resolve({ ...s, ...JSON.parse(out) }) : reject(new Error(`${JSON.stringify(s)}: exit ${code}`)))));
}

if (args.arena !== undefined) {
  await child(args.arena === 'on', args.budget === 'on', args.pattern !== 'off', args.warm === 'on');
} else {
  console.log(`# model memory: ${SECONDS} s per setting, all at once; ${machineKind()}, node ${process.version}`);
  // First the setting model.ts and `npm start` use (the CPU arena warmed up, glibc's dynamic
  // threshold); then the lean one (no arena, a fixed mmap threshold, huge pages), it without huge
  // pages, without the fixed threshold either, the current one without the budget, and without the warm-up.
  const current: Setting = { arena: true, budget: true, pattern: false, warm: true };
  const only = args.only?.split(',').map(Number);
  const lean: Setting = { arena: false, budget: true, pattern: false, mmapThreshold: 131072, hugePages: true };
  const settings: Setting[] = [current, lean, { ...lean, hugePages: false }, { ...lean, mmapThreshold: undefined, hugePages: false }, { ...current, budget: false, warm: false }, { ...current, warm: false }];
  const results = await Promise.all(settings.filter((_, i) => only === undefined || only.includes(i)).map(run));
  console.log(`\n| CPU arena | call budget (${DEFAULT_CALL_TOKENS} tokens, ${DEFAULT_CALL_ATTENTION} b·l²) | memory patterns | mmap threshold | warm-up (CPU ms) | model calls | tokens per CPU-s (ratio) | RssAnon opened / start | every tenth of the run (MB) | last / max |`);
  console.log('|---|---|---|---|---|---:|---:|---:|---|---|');
  const f = (x: number) => x.toFixed(0);
  for (const r of results) {
    const speed = `${f(r.tokensPerCpuSecond)} (${(r.tokensPerCpuSecond / results[0].tokensPerCpuSecond).toFixed(2)})`;
    console.log(
      `| ${r.arena ? 'on' : 'off'} | ${r.budget ? 'on' : 'off'} | ${r.pattern ? 'on' : 'off'} | ${r.mmapThreshold ?? 'dynamic'}${r.hugePages ? ', huge pages' : ''} | ${r.warm ? f(r.warmUpMs) : 'off'} | ${r.calls} | ${speed} | ${f(r.opened)} / ${f(r.start)} | ${r.samples.map(f).join(' ')} | ${f(r.samples.at(-1) ?? r.start)} / ${f(Math.max(r.start, ...r.samples))} |`,
    );
  }
}
