import assert from 'node:assert/strict';
import { it } from 'node:test';
import Fastify from 'fastify';
import { Type } from 'typebox';
import { registerAnswerCheck } from './answer-check.ts';

it('turns an answer its response schema would change into a 500 naming the member, and passes a complete one', async () => {
  const app = Fastify();
  registerAnswerCheck(app);
  const response = { 200: Type.Object({ a: Type.String(), open: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }) };
  const answers: Record<string, unknown> = { complete: { a: 'x', open: { any: [1, { b: null }] } }, extra: { a: 'x', leak: 'secret' }, coerced: { a: null } };
  app.get('/:which', { schema: { response } }, async (req) => answers[(req.params as { which: string }).which]);
  const complete = await app.inject('/complete');
  assert.equal(complete.statusCode, 200);
  assert.deepEqual(complete.json(), answers.complete);
  const extra = await app.inject('/extra');
  assert.equal(extra.statusCode, 500);
  assert.match(extra.json().detail, /at \/leak: handler gave "secret"/);
  const coerced = await app.inject('/coerced');
  assert.equal(coerced.statusCode, 500);
  assert.match(coerced.json().detail, /at \/a: handler gave null, schema wrote ""/);
  await app.close();
});
