import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PROJECT_ROOT } from '../config/config.ts';
import { startTestApp, type TestApp } from './testing.ts';

interface Reference {
  items: { text: string; tokens: number; vector: number[] }[];
}

const cosine = (a: number[], b: number[]) => {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
};

describe('fidelity through the service (real model)', () => {
  let t: TestApp;
  let ref: Reference;
  before(async () => {
    t = await startTestApp({ model: 'real' });
    ref = JSON.parse(await readFile(path.join(PROJECT_ROOT, 'models/all-MiniLM-L6-v2/reference/vectors.json'), 'utf8')) as Reference;
  });
  after(() => t.close());

  it('embeds every reference text to cosine >= 0.9999 of its reference vector, with the same token counts', async () => {
    assert.equal(ref.items.length, 40);
    const res = await t.call('POST', '/v1/embeddings', { input: ref.items.map((i) => i.text) });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json() as { data: { index: number; embedding: number[] }[]; usage: { prompt_tokens: number } };
    let worst = 1;
    for (const d of body.data) {
      const c = cosine(d.embedding, ref.items[d.index].vector);
      worst = Math.min(worst, c);
      assert.ok(c >= 0.9999, `text ${d.index} (${JSON.stringify(ref.items[d.index].text.slice(0, 40))}): cosine ${c}`);
    }
    assert.equal(body.usage.prompt_tokens, ref.items.reduce((s, i) => s + i.tokens, 0));
    // One at a time, through /v1/generate/ (the micro-batcher pads differently): same answer.
    for (const idx of [0, ref.items.length - 1]) {
      const g = await t.call('GET', `/v1/generate/?text=${encodeURIComponent(ref.items[idx].text)}`);
      assert.ok(cosine(g.json().vector, ref.items[idx].vector) >= 0.9999);
    }
    assert.ok(worst >= 0.9999);
  });
});

describe('while the model loads', () => {
  it('answers 503 on the healthcheck and on anything that needs the model, and serves the rest', async () => {
    const { ModelRegistry } = await import('../embedding/registry.ts');
    const { loadConfig } = await import('../config/config.ts');
    const t = await startTestApp({ model: 'fake' });
    // Swap in a registry whose model never finishes loading.
    const config = loadConfig({});
    const slow = new ModelRegistry({ modelDir: config.modelDir, defaultModel: config.defaultModel, embedding: config.embedding, load: () => new Promise(() => {}) });
    await slow.discover();
    void slow.start();
    const { buildApp } = await import('./app.ts');
    const app = await buildApp({ ...t.deps, models: slow });
    try {
      const headers = { 'x-api-key': 'test-admin-key-0123456789abcdef' };
      const health = await app.inject({ method: 'GET', url: '/v1/healthcheck/' });
      assert.equal(health.statusCode, 503);
      assert.deepEqual(health.json().checks, { storage: 'ok', model: 'loading' });
      const search = await app.inject({ method: 'POST', url: '/v1/search/', headers, payload: { query: 'x', keyspace: 'default_keyspace', table: 'vector' } });
      assert.equal(search.statusCode, 503);
      assert.equal(search.json().code, 'not_ready');
      const byVector = await app.inject({ method: 'POST', url: '/v1/vector/write', headers, payload: { keyspace: 'default_keyspace', table: 'vector', key: 'v', vector: Array.from({ length: 384 }, () => 0.1) } });
      assert.equal(byVector.statusCode, 200, byVector.body);
    } finally {
      await app.close();
      await t.close();
    }
  });
});
