/**
 * A long fuzz of every operation of /v1/openapi.json (the run openapi-fuzz.test.ts makes short):
 * requests generated from the served document's schemas, and mutated ones, through app.inject()
 * on embedded storage with the fake embedder.
 *   node --import tsx bench/fuzz.bench.ts [--seconds 60 | --runs 2000] [--seed 1]
 * `--runs` is per operation and kind (described, mutated); `--seconds` shares the time among the
 * operations. A 5xx, a 4xx without a problem body, or an answer to a described request that the
 * document does not declare (status, media type, schema), is printed with its seed and path (fast-check
 * replays it with the same seed and path) and makes the exit code 1. Prints, per operation, how
 * many described requests were served (2xx, or 404 for a name that does not exist); 429s from
 * the per-address limit of the public routes are counted apart.
 */
import fc from 'fast-check';
import { describe, operationsOf, send, type OpenApiDocument } from '../src/http/openapi-fuzz.ts';
import { ADMIN_KEY, startTestApp } from '../src/http/testing.ts';
import { machineKind } from './machine-check.ts';
import { benchArgs } from './lib/args.ts';

const args = benchArgs({ seconds: undefined, runs: undefined, seed: undefined });
const SECONDS = Number(args.seconds ?? (args.runs ? 0 : 60));
const RUNS = Number(args.runs ?? 0);
const SEED = Number(args.seed ?? Date.now() % 2 ** 31);

const t = await startTestApp({ model: 'fake', env: { STRIPE_WEBHOOK_SECRET: 'whsec_fuzz' } });
let failed = false;
try {
  const ops = operationsOf((await t.call('GET', '/v1/openapi.json')).json() as OpenApiDocument);
  console.log(`# fuzz.bench  ${machineKind()}  seed ${SEED}  ${RUNS ? `${RUNS} runs per operation and kind` : `${SECONDS} s`}  ${ops.length} operations`);
  const budgetMs = (SECONDS * 1000) / (ops.length * 2);
  let sent = 0;
  const started = performance.now();
  for (const op of ops) {
    let served = 0;
    let described = 0;
    // Public routes allow an address 300 requests a minute: those 429s are neither served nor refused.
    let limited = 0;
    for (const [kind, arb] of [['described', op.valid], ['mutated', op.mutated]] as const) {
      const result = await fc.check(
        fc.asyncProperty(arb, async (request) => {
          const out = await send(t.app, op, request, { 'x-api-key': ADMIN_KEY });
          sent++;
          if (kind === 'described') {
            if (out.status === 429) limited++;
            else described++;
            if (out.status < 300 || out.status === 404) served++;
          }
          if (out.fault) throw new Error(`${describe(request)} -> ${out.fault}`);
        }),
        { seed: SEED, numRuns: RUNS || 1_000_000, interruptAfterTimeLimit: RUNS ? undefined : budgetMs, markInterruptAsFailure: false, endOnFailure: true, includeErrorInReport: true },
      );
      // A time limit reached before the first run ended (GET /v1/docker/ waits on DOCKER_HOST) is no fault.
      if (result.failed && result.interrupted && result.counterexample === null) {
        console.log(`  ${op.method} ${op.path} (${kind}): no run finished within ${budgetMs.toFixed(0)} ms`);
      } else if (result.failed) {
        failed = true;
        console.log(`FAIL ${op.method} ${op.path} (${kind}): seed ${result.seed} path ${result.counterexamplePath}\n  ${String(result.errorInstance).slice(0, 800)}`);
      }
    }
    console.log(`${op.method.padEnd(6)} ${op.path.padEnd(40)} served ${served}/${described}${limited ? ` (${limited} rate-limited)` : ''}`);
  }
  const s = (performance.now() - started) / 1000;
  console.log(`# ${sent} requests in ${s.toFixed(1)} s (${(sent / s).toFixed(0)}/s), ${failed ? 'FAILURES above' : 'no 5xx, every 4xx a problem body'}`);
} finally {
  await t.close();
}
process.exit(failed ? 1 : 0);
