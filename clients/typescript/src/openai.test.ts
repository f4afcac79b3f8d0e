/** The official `openai` package's embeddings call against the service's OpenAI-compatible endpoint. */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import OpenAI from 'openai';
import { startTempServer, type TempServer } from './test-server.ts';

const ADMIN = 'openai-admin-key-0123456789abcdef';
let running: TempServer;

before(async () => {
  running = await startTempServer('openai', ADMIN);
});
after(() => running?.stop());

const cosine = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i], 0) / Math.hypot(...a) / Math.hypot(...b);

it('client.embeddings.create answers one 384-value vector per input, in order, with token usage', async () => {
  const openai = new OpenAI({ baseURL: `${running.server.url}/v1`, apiKey: ADMIN, maxRetries: 0 });
  const input = ['A cat is lying on a sofa.', 'A kitten rests on the couch.', 'Quarterly tax filing deadlines.'];
  const answer = await openai.embeddings.create({ model: 'all-MiniLM-L6-v2', input });
  assert.equal(answer.model, 'all-MiniLM-L6-v2');
  assert.deepEqual(answer.data.map((d) => [d.index, d.embedding.length]), [[0, 384], [1, 384], [2, 384]]);
  const [cat, kitten, tax] = answer.data.map((d) => d.embedding);
  assert.ok(cosine(cat, kitten) > cosine(cat, tax) + 0.2, `${cosine(cat, kitten)} vs ${cosine(cat, tax)}`);
  assert.ok(answer.usage.prompt_tokens > input.length * 2);

  // The package asks for base64 by default when encoding_format is not given; asking for floats gives the same vector.
  const floats = await openai.embeddings.create({ model: 'all-MiniLM-L6-v2', input: input[0], encoding_format: 'float' });
  assert.ok(cosine(floats.data[0].embedding, cat) > 0.9999);
});

it('a wrong key or model is the SDK’s typed error with the service’s status', async () => {
  const stranger = new OpenAI({ baseURL: `${running.server.url}/v1`, apiKey: 'not-a-key-0123456789', maxRetries: 0 });
  await assert.rejects(stranger.embeddings.create({ model: 'all-MiniLM-L6-v2', input: 'x' }), (e: unknown) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  const openai = new OpenAI({ baseURL: `${running.server.url}/v1`, apiKey: ADMIN, maxRetries: 0 });
  await assert.rejects(openai.embeddings.create({ model: 'no-such-model', input: 'x' }), (e: unknown) => e instanceof OpenAI.BadRequestError && e.status === 400);
});
