import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_MODEL, PROJECT_ROOT } from '../config/config.ts';
import { paragraph } from '../../bench/text-gen.ts';
import { BulkPool } from './bulk-pool.ts';
import { Embedder } from './embedder.ts';
import { loadModel, type EmbeddingModel } from './model.ts';

const MODEL_DIR = path.join(PROJECT_ROOT, 'models');

const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

describe('bulk embedding threads (real model)', () => {
  let model: EmbeddingModel;
  before(async () => {
    model = await loadModel(MODEL_DIR, DEFAULT_MODEL);
  });
  after(async () => {
    await model?.dispose();
  });

  const startPool = (workers = 1) => BulkPool.start({ modelDir: MODEL_DIR, name: DEFAULT_MODEL, dimension: model.dimension, workers, threads: 1, nice: 5 });

  test('give the vectors and token counts of the main thread\'s model, spread over the threads', async () => {
    const pool = await startPool(2);
    try {
      const texts = Array.from({ length: 6 }, () => paragraph());
      const direct = await model.embed(texts);
      const [a, b] = await Promise.all([pool.embed(texts.slice(0, 3)), pool.embed(texts.slice(3))]);
      const got = [...a.vectors, ...b.vectors];
      assert.deepEqual([...a.tokens, ...b.tokens], direct.tokens);
      got.forEach((v, i) => {
        assert.equal(v.length, 384);
        assert.ok(dot(v, direct.vectors[i]) > 0.99999, `text ${i}: cosine ${dot(v, direct.vectors[i])}`);
      });
      assert.notEqual(got[0].buffer, got[1].buffer, 'each vector is its own array');
    } finally {
      await pool.close();
    }
  });

  test('a query asked during a bulk write is answered first, by the main thread\'s model', async () => {
    const pool = await startPool(1);
    const e = new Embedder(model, { maxBatch: 8, batchWindowMs: 0, cacheEntries: 0, startBulk: async () => pool });
    try {
      await e.embed(['warm'], { bulk: true }); // starts the threads (until then bulk text runs here)
      assert.equal(e.stats().bulkThreads, true);
      const passages = Array.from({ length: 48 }, () => paragraph() + ' ' + paragraph());
      const order: string[] = [];
      const bulk = e.embed(passages, { bulk: true }).then((v) => (order.push('bulk'), v));
      const query = e.embed(['how do I reset my password']).then((v) => (order.push('query'), v));
      const [bv, [qv]] = await Promise.all([bulk, query]);
      assert.deepEqual(order, ['query', 'bulk']);
      assert.ok(dot(qv, (await model.embed(['how do I reset my password'])).vectors[0]) > 0.99999);
      const direct = await model.embed(passages.slice(0, 2));
      assert.ok(dot(bv[0], direct.vectors[0]) > 0.99999 && dot(bv[1], direct.vectors[1]) > 0.99999, 'bulk vectors in the caller\'s order');
    } finally {
      await e.close(); // closes the pool too
    }
    assert.equal(pool.usable, false);
  });

  test('an aborted bulk call drops its batches not yet started', async () => {
    const pool = await startPool(1);
    const e = new Embedder(model, { maxBatch: 2, batchWindowMs: 0, cacheEntries: 0, startBulk: async () => pool });
    try {
      await e.embed(['warm'], { bulk: true });
      const ac = new AbortController();
      const calls = e.stats().calls;
      const bulk = e.embed(Array.from({ length: 40 }, () => paragraph()), { bulk: true, signal: ac.signal });
      ac.abort(new Error('client left'));
      await assert.rejects(bulk, /client left/);
      assert.equal(pool.queued, 0, 'nothing left waiting');
      assert.equal(e.stats().calls - calls, 20, 'twenty batches were handed over');
      assert.equal(e.stats().errors, 0, 'dropped batches are not model errors');
    } finally {
      await e.close();
    }
  });

  test('start() rejects, naming the model, when a thread cannot open it', async () => {
    await assert.rejects(
      BulkPool.start({ modelDir: MODEL_DIR, name: 'no-such-model', dimension: 384, workers: 2, threads: 1, nice: 0 }),
      /no-such-model/,
    );
  });
});
