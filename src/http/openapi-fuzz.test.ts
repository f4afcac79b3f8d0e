import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { describe as describeRequest, operationsOf, send, type FuzzOperation, type OpenApiDocument } from './openapi-fuzz.ts';
import { ADMIN_KEY, startTestApp, type TestApp } from './testing.ts';

/** Seeded: a failure names its seed and path, and the same run reproduces it. */
const SEED = 20_241_124;
const RUNS_PER_OPERATION = 25;

/**
 * Operations where a request the document describes should be served (2xx, or 404 for a name
 * that does not exist), not refused as invalid. The others check what no schema can say: search's
 * numeric cross-field rules (final_top_k at most initial_top_k, mmr candidates between them) and
 * a vector that float32 rounds to zeros, a multipart upload, a Stripe signature, a container runtime.
 */
const AGREEING = [
  'POST /v1/vector/write',
  'POST /v1/vector/batch',
  'POST /v1/vector/delete',
  'POST /v1/vector/count',
  'POST /v1/keyspaces/table/create',
  'POST /v1/embeddings',
  'GET /v1/user/{account_id}',
  'GET /v1/keys/retrieve',
  'GET /v1/files/',
  'GET /v1/files/{keyspace}/{table}/{*}',
  'DELETE /v1/files/{keyspace}/{table}/{*}',
  'POST /v1/vector/get',
  'POST /v1/vector/list',
  'POST /v1/metadata/write',
  'POST /v1/metadata/batch',
  'POST /v1/keyspaces/create',
  'POST /v1/keys/revoke',
  'POST /v1/keys/rotate',
  'POST /v1/connection/',
  'POST /v1/user/',
  'POST /v1/chat/',
];
/** The share of described requests those operations must serve. */
const MIN_SERVED_SHARE = 0.9;

// The fake embedder: the fuzz checks statuses and shapes, never meaning.
describe('every operation of /v1/openapi.json, fuzzed from its own schemas', () => {
  let t: TestApp;
  let ops: FuzzOperation[];
  before(async () => {
    // A webhook secret, so that the Stripe webhook checks its signature rather than answer 503.
    t = await startTestApp({ model: 'fake', env: { STRIPE_WEBHOOK_SECRET: 'whsec_fuzz' } });
    ops = operationsOf((await t.call('GET', '/v1/openapi.json')).json() as OpenApiDocument);
  });
  after(() => t.close());

  it('refuses an answer whose status, media type or body the document does not declare', () => {
    const search = ops.find((o) => o.path === '/v1/search/')!;
    const answer = (statusCode: number, type: string, body: unknown) => ({ statusCode, headers: { 'content-type': type }, body: JSON.stringify(body) }) as never;
    assert.match(search.checkAnswer(answer(418, 'application/json', {})) ?? '', /status 418 is not declared/);
    assert.match(search.checkAnswer(answer(200, 'application/problem+json', {})) ?? '', /200 application\/problem\+json is not declared/);
    assert.match(search.checkAnswer(answer(200, 'application/json', { matches: [] })) ?? '', /does not match its schema/);
    assert.match(search.checkAnswer(answer(404, 'application/problem+json', { code: 'vector_not_found' })) ?? '', /does not match its schema/);
    assert.equal(search.checkAnswer(answer(200, 'application/json; charset=utf-8', { query: 'q', model_name: 'all-MiniLM-L6-v2', keyspace: 'k', table: 't', metric: 'cosine', initial_top_k: 1, final_top_k: 1, include_vector: false, mode: 'semantic', matches: [] })), null);
  });

  it('answers no 5xx, and a problem body for every 4xx, to described and mutated requests; described ones as the document declares', async () => {
    const served = new Map<string, { ok: number; refused: number; example?: string }>();
    for (const op of ops) {
      const name = `${op.method} ${op.path}`;
      const tally = { ok: 0, refused: 0 } as { ok: number; refused: number; example?: string };
      served.set(name, tally);
      for (const [kind, arb] of [['described', op.valid], ['mutated', op.mutated]] as const) {
        await fc.assert(
          fc.asyncProperty(arb, async (request) => {
            const out = await send(t.app, op, request, { 'x-api-key': ADMIN_KEY });
            if (out.fault) throw new Error(`${describeRequest(request)} -> ${out.fault}`);
            if (kind === 'described') {
              if (out.status < 300 || out.status === 404) tally.ok++;
              else {
                tally.refused++;
                tally.example ??= `${describeRequest(request).slice(0, 200)} -> ${out.status}`;
              }
            }
          }),
          { seed: SEED, numRuns: RUNS_PER_OPERATION, endOnFailure: true, includeErrorInReport: true },
        );
      }
    }
    const report = [...served].map(([name, s]) => `${name}: ${s.ok}/${s.ok + s.refused} served${s.example ? `; e.g. ${s.example}` : ''}`);
    console.log(`# described requests served (2xx or 404) per operation:\n# ${report.join('\n# ')}`);
    for (const name of AGREEING) {
      const s = served.get(name);
      assert.ok(s, `${name} is not in the document`);
      const share = s.ok / (s.ok + s.refused);
      assert.ok(share >= MIN_SERVED_SHARE, `${name}: ${s.ok}/${s.ok + s.refused} described requests served; e.g. ${s.example}`);
    }
  });
});
