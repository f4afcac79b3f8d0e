/**
 * What onnxruntime keeps of a model's working memory: one process per setting (its CPU memory
 * arena on, the default, or off; the per-call budget of model.ts on, the default, or off; its
 * memory patterns, a cached plan per input shape, on as before or off as model.ts has them), all
 * at once so they meet the same machine, each calling the shipped model in a loop with batches
 * of random shapes (1-32 texts of 4-256 tokens, small ones likelier, as a server's mix of
 * queries and upload batches); with the budget, a batch runs as the calls callGroups makes of it.
 * Each reports its RssAnon every tenth of the run; a level line is a high-water mark, a climbing
 * one a leak.
 *   node --import tsx bench/model-memory.bench.ts [--seconds 180]
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { DEFAULT_MODEL, PROJECT_ROOT } from '../src/config/config.ts';
import { callGroups, DEFAULT_CALL_ATTENTION, DEFAULT_CALL_TOKENS } from '../src/embedding/model.ts';
import { machineKind } from './machine-check.ts';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '180' }, arena: { type: 'string' }, budget: { type: 'string' }, pattern: { type: 'string' } } });
const SECONDS = Number(args.seconds);
const rssAnonMb = (): number => Number(/RssAnon:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) / 1024;

/** One setting, in this process: the loop, then one line of JSON on stdout. */
async function child(arena: boolean, budget: boolean, pattern: boolean): Promise<void> {
  const file = path.join(PROJECT_ROOT, 'models', DEFAULT_MODEL, 'onnx', 'model.onnx');
  const session = await InferenceSession.create(file, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all', enableCpuMemArena: arena, enableMemPattern: pattern });
  const start = rssAnonMb();
  const samples: number[] = [];
  const t0 = Date.now();
  let n = 0;
  while (Date.now() - t0 < SECONDS * 1000) {
    const b = 1 + Math.floor(Math.random() ** 2 * 32);
    const l = 4 + Math.floor(Math.random() ** 2 * 252);
    const calls = budget ? callGroups(new Array<number>(b).fill(l), { tokens: DEFAULT_CALL_TOKENS, attention: DEFAULT_CALL_ATTENTION }).map((g) => g.length) : [b];
    for (const rows of calls) await call(rows, l);
    if (Date.now() - t0 >= ((samples.length + 1) * SECONDS * 1000) / 10) samples.push(rssAnonMb());
  }
  process.stdout.write(`${JSON.stringify({ arena, budget, pattern, calls: n, start, samples })}\n`);

  async function call(b: number, l: number): Promise<void> {
    const ids = BigInt64Array.from({ length: b * l }, () => BigInt(1000 + Math.floor(Math.random() * 20000)));
    const feeds: Record<string, Tensor> = { input_ids: new Tensor('int64', ids, [b, l]), attention_mask: new Tensor('int64', new BigInt64Array(b * l).fill(1n), [b, l]) };
    if (session.inputNames.includes('token_type_ids')) feeds.token_type_ids = new Tensor('int64', new BigInt64Array(b * l), [b, l]);
    await session.run(feeds);
    n++;
  }
}

type Result = { arena: boolean; budget: boolean; pattern: boolean; calls: number; start: number; samples: number[] };
function run(arena: boolean, budget: boolean, pattern = true): Promise<Result> {
  const me = fileURLToPath(import.meta.url);
  const p = spawn(process.execPath, [...process.execArgv, me, '--seconds', String(SECONDS), '--arena', arena ? 'on' : 'off', '--budget', budget ? 'on' : 'off', '--pattern', pattern ? 'on' : 'off'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`arena ${arena}, budget ${budget}, pattern ${pattern}: exit ${code}`)))));
}

if (args.arena !== undefined) {
  await child(args.arena === 'on', args.budget === 'on', args.pattern !== 'off');
} else {
  console.log(`# model memory: ${SECONDS} s per setting, all five at once; ${machineKind()}, node ${process.version}`);
  const results = await Promise.all([run(true, false), run(false, false), run(true, true), run(false, true), run(true, true, false)]);
  console.log(`\n| CPU arena | call budget (${DEFAULT_CALL_TOKENS} tokens, ${DEFAULT_CALL_ATTENTION} b·l²) | memory patterns | model calls | RssAnon at start | every tenth of the run (MB) | last / max |`);
  console.log('|---|---|---|---:|---:|---|---|');
  for (const r of results) {
    const f = (x: number) => x.toFixed(0);
    console.log(`| ${r.arena ? 'on' : 'off'} | ${r.budget ? 'on' : 'off'} | ${r.pattern ? 'on' : 'off'} | ${r.calls} | ${f(r.start)} | ${r.samples.map(f).join(' ')} | ${f(r.samples.at(-1) ?? r.start)} / ${f(Math.max(r.start, ...r.samples))} |`);
  }
}
