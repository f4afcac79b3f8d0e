import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PROJECT_ROOT } from '../config/config.ts';
import { isServiceError } from '../errors.ts';
import { CACHE_MAX_TEXT_CHARS, Embedder } from './embedder.ts';
import { FakeEmbeddingModel } from './fake.ts';
import { loadModel, type EmbeddingModel } from './model.ts';
import { ModelRegistry } from './registry.ts';

const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

/** Starts a slow model call and resolves once the model is busy with it; `done` is that call. */
async function keepBusy(e: Embedder, model: FakeEmbeddingModel): Promise<{ done: Promise<unknown> }> {
  const before = model.callCount;
  const done = e.embed([`warm-up ${before}`]);
  while (model.callCount === before) await new Promise((r) => setTimeout(r, 1));
  return { done };
}

describe('Embedder batching (fake model)', () => {
  test('50 concurrent callers share few model calls and each gets its own vectors in order', async () => {
    const model = new FakeEmbeddingModel({ dimension: 16, delayMs: 1 });
    const e = new Embedder(model, { maxBatch: 32, batchWindowMs: 5, cacheEntries: 0 });
    const requests = Array.from({ length: 50 }, (_, i) =>
      Array.from({ length: 1 + (i % 3) }, (_, j) => `caller ${i} text ${j} ${'word '.repeat((i * 7 + j) % 13)}`),
    );
    const results = await Promise.all(requests.map((texts) => e.embed(texts)));
    const totalTexts = requests.reduce((n, r) => n + r.length, 0);
    assert.ok(model.callCount <= Math.ceil(totalTexts / 32) + 1, `${model.callCount} model calls for ${totalTexts} texts`);
    assert.ok(model.calls.every((c) => c.length <= 32));
    for (const [i, texts] of requests.entries()) {
      assert.equal(results[i].length, texts.length);
      for (const [j, t] of texts.entries()) assert.deepEqual(results[i][j], model.vectorOf(t), `caller ${i} text ${j}`);
    }
    // Same as direct model calls.
    const direct = await model.embed(requests[7]);
    assert.deepEqual(results[7], direct.vectors);
    const st = e.stats();
    assert.equal(st.requests, 50);
    assert.equal(st.texts, totalTexts);
    assert.equal(st.calls, model.callCount - 1);
    assert.equal(st.batchSizes.reduce((a, b) => a + b, 0), st.calls);
  });

  test('with no window, a lone text goes at once, same-turn texts go together, and texts queued behind a busy model share its next call', async () => {
    const model = new FakeEmbeddingModel({ delayMs: 30 });
    const e = new Embedder(model, { maxBatch: 32, batchWindowMs: 0, cacheEntries: 0 });
    const t0 = performance.now();
    await e.embed(['alone']);
    assert.deepEqual(model.calls.map((c) => c.length), [1]);
    assert.ok(performance.now() - t0 < 30 + 25, 'no timed wait before the call');
    await Promise.all([e.embed(['x1']), e.embed(['x2']), e.embed(['x3'])]);
    assert.deepEqual(model.calls.map((c) => c.length), [1, 3], 'one turn, one call');
    const busy = e.embed(['first']);
    await new Promise((r) => setTimeout(r, 5));
    const queued = [e.embed(['q1']), e.embed(['q2'])];
    await new Promise((r) => setTimeout(r, 5));
    queued.push(e.embed(['q3']));
    await Promise.all([busy, ...queued]);
    assert.deepEqual(model.calls.map((c) => c.length), [1, 3, 1, 3]);
  });

  test('texts in one model call are sorted by token count', async () => {
    const model = new FakeEmbeddingModel({ delayMs: 20 });
    const e = new Embedder(model, { maxBatch: 4, batchWindowMs: 1, cacheEntries: 0 });
    const warm = await keepBusy(e, model);
    // These queue up while the model is busy, then go out together, shortest first.
    const texts = ['a b c d e f', 'a', 'a b c d e f g h', 'a b', 'a b c', 'a b c d e f g h i j'];
    const out = await Promise.all(texts.map((t) => e.embed([t])));
    await warm.done;
    out.forEach((v, i) => assert.deepEqual(v[0], model.vectorOf(texts[i])));
    assert.deepEqual(model.calls.slice(1), [
      ['a', 'a b', 'a b c', 'a b c d e f'],
      ['a b c d e f g h', 'a b c d e f g h i j'],
    ]);
  });

  test('duplicate texts across callers are embedded once; usage reports token counts', async () => {
    const model = new FakeEmbeddingModel();
    const e = new Embedder(model, { maxBatch: 32, batchWindowMs: 5, cacheEntries: 0 });
    const [a, b] = await Promise.all([e.embedWithUsage(['x y', 'same text']), e.embedWithUsage(['same text', 'z'])]);
    assert.equal(model.callCount, 1);
    assert.equal(model.calls[0].length, 3);
    assert.deepEqual(a.tokens, [4, 4]);
    assert.deepEqual(b.tokens, [4, 3]);
    assert.deepEqual(a.vectors[1], b.vectors[0]);
    assert.notEqual(a.vectors[1], b.vectors[0], 'callers get their own arrays');
  });

  test('cache hits skip the model', async () => {
    const model = new FakeEmbeddingModel();
    const e = new Embedder(model, { maxBatch: 32, batchWindowMs: 1, cacheEntries: 2 });
    const first = await e.embedWithUsage(['alpha', 'beta']);
    assert.equal(model.callCount, 1);
    first.vectors[0][0] = 42; // callers own their arrays; the cache is unaffected
    const again = await e.embedWithUsage(['beta', 'alpha']);
    assert.equal(model.callCount, 1);
    assert.deepEqual(again.vectors, [model.vectorOf('beta'), model.vectorOf('alpha')]);
    assert.deepEqual(again.tokens, [3, 3]);
    assert.equal(e.stats().cacheHits, 2);
    // LRU: 'gamma' evicts the least recently used ('beta', as 'alpha' was read last).
    await e.embed(['gamma']);
    await e.embed(['alpha']);
    assert.equal(model.callCount, 2);
    await e.embed(['beta']);
    assert.equal(model.callCount, 3);
    // Long texts are not cached.
    const long = 'w '.repeat(CACHE_MAX_TEXT_CHARS);
    await e.embed([long]);
    await e.embed([long]);
    assert.equal(model.callCount, 5);
  });

  test('cacheEntries 0 disables the cache', async () => {
    const model = new FakeEmbeddingModel();
    const e = new Embedder(model, { maxBatch: 32, batchWindowMs: 0, cacheEntries: 0 });
    await e.embed(['q']);
    await e.embed(['q']);
    assert.equal(model.callCount, 2);
  });

  test('a failing model call rejects only its callers', async () => {
    const model = new FakeEmbeddingModel({ delayMs: 20, failWhen: (texts) => texts.some((t) => t.startsWith('boom')) });
    const e = new Embedder(model, { maxBatch: 2, batchWindowMs: 1, cacheEntries: 16 });
    const warm = await keepBusy(e, model);
    // Sorted by length: ['a', 'b c'] then ['boom x y z', 'd e f g h i'] then ['j k l m n o p q'].
    const calls = [
      e.embed(['a']),
      e.embed(['b c']),
      e.embed(['boom x y z']),
      e.embed(['d e f g h i']),
      e.embed(['j k l m n o p q']),
      e.embed(['a', 'boom x y z']),
    ];
    const settled = await Promise.allSettled(calls);
    await warm.done;
    assert.deepEqual(model.calls.slice(1), [['a', 'b c'], ['boom x y z', 'd e f g h i'], ['j k l m n o p q']]);
    assert.deepEqual(
      settled.map((s) => s.status),
      ['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled', 'rejected'],
    );
    assert.match(String((settled[2] as PromiseRejectedResult).reason), /fake model failure/);
    assert.equal(e.stats().errors, 1);
    // Nothing of the failed call was cached; the embedder keeps working.
    assert.deepEqual(await e.embed(['d e f g h i']), [model.vectorOf('d e f g h i')]);
  });

  test('a full batch does not wait for the window', async () => {
    const model = new FakeEmbeddingModel();
    const e = new Embedder(model, { maxBatch: 4, batchWindowMs: 10_000, cacheEntries: 0 });
    const t0 = performance.now();
    await e.embed(['1', '2', '3', '4']);
    assert.ok(performance.now() - t0 < 1000);
  });

  test('empty input resolves at once; non-strings are refused; close refuses new work', async () => {
    const model = new FakeEmbeddingModel();
    const e = new Embedder(model, { maxBatch: 4, batchWindowMs: 50, cacheEntries: 0 });
    assert.deepEqual(await e.embed([]), []);
    await assert.rejects(e.embed([1 as unknown as string]), TypeError);
    const pending = e.embed(['queued']);
    await e.close();
    assert.deepEqual(await pending, [model.vectorOf('queued')]);
    await assert.rejects(e.embed(['late']), (err: unknown) => isServiceError(err) && err.code === 'not_ready');
  });
});

describe('ModelRegistry', () => {
  test('fromModels: default, unknown names, list, dimension', async () => {
    const reg = ModelRegistry.fromModels([new FakeEmbeddingModel({ name: 'f1', dimension: 4 }), new FakeEmbeddingModel({ name: 'f2', dimension: 6 })]);
    assert.equal(reg.ready(), true);
    assert.equal(reg.get().name, 'f1');
    assert.equal(reg.get('f2').dimension, 6);
    assert.equal(reg.dimension('f2'), 6);
    assert.deepEqual(reg.list(), [
      { name: 'f1', dimension: 4, maxTokens: 256, ready: true },
      { name: 'f2', dimension: 6, maxTokens: 256, ready: true },
    ]);
    assert.throws(
      () => reg.get('nope'),
      (e: unknown) => isServiceError(e) && e.code === 'unknown_model' && JSON.stringify(e.extra) === JSON.stringify({ valid: ['f1', 'f2'] }),
    );
    assert.equal((await reg.get().embed(['x']))[0].length, 4);
    await reg.close();
    assert.equal(reg.ready(), false);
  });

  /** A registry over the default model's folder whose (fake) model loads only once released. */
  function gatedRegistry(): { reg: ModelRegistry; release: () => void } {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const reg = new ModelRegistry({
      modelDir: path.join(PROJECT_ROOT, 'models'),
      defaultModel: 'all-MiniLM-L6-v2',
      embedding: { maxBatch: 8, batchWindowMs: 1, cacheEntries: 0 },
      load: async (_dir, name) => {
        await gate;
        return new FakeEmbeddingModel({ name, dimension: 384 });
      },
    });
    return { reg, release };
  }

  test('a model still loading is not_ready; ready once loaded', async () => {
    const { reg, release } = gatedRegistry();
    assert.equal(reg.ready(), false);
    assert.throws(() => reg.get(), (e: unknown) => isServiceError(e) && e.code === 'not_ready');
    const started = reg.start();
    await new Promise((r) => setTimeout(r, 20));
    assert.throws(() => reg.get(), (e: unknown) => isServiceError(e) && e.code === 'not_ready' && /all-MiniLM-L6-v2 is loading/.test(e.message));
    assert.deepEqual(reg.list(), [{ name: 'all-MiniLM-L6-v2', dimension: 384, maxTokens: 256, ready: false }]);
    assert.equal(reg.dimension(), 384);
    release();
    await started;
    assert.equal(reg.ready(), true);
    assert.equal(reg.get().dimension, 384);
    await reg.close();
  });

  test('whenLoaded() hears of models loaded before and after it is called, and a listener that throws fails no model', async () => {
    const { reg, release } = gatedRegistry();
    const early: string[] = [];
    reg.whenLoaded((m) => early.push(m.name));
    reg.whenLoaded(() => {
      throw new Error('a listener bug');
    });
    const started = reg.start();
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(early, [], 'nothing is loaded yet');
    release();
    await assert.rejects(started, /a listener bug/);
    assert.deepEqual(early, ['all-MiniLM-L6-v2']);
    assert.equal(reg.ready(), true, 'the model is ready all the same');
    const late: string[] = [];
    reg.whenLoaded((m) => late.push(m.name));
    assert.deepEqual(late, ['all-MiniLM-L6-v2'], 'told at once of a model already loaded');
    await reg.close();
  });

  test('start() finds other model folders (onnx/model.onnx + SHA256SUMS) and loads them in the background', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'vss-models-'));
    try {
      const mk = async (name: string, dim: number, withOnnx: boolean): Promise<void> => {
        await mkdir(path.join(dir, name, 'onnx'), { recursive: true });
        await writeFile(path.join(dir, name, 'config.json'), JSON.stringify({ hidden_size: dim, max_position_embeddings: 512 }));
        await writeFile(path.join(dir, name, 'sentence_bert_config.json'), JSON.stringify({ max_seq_length: 128 }));
        await writeFile(path.join(dir, name, 'SHA256SUMS'), '');
        if (withOnnx) await writeFile(path.join(dir, name, 'onnx', 'model.onnx'), '');
      };
      await mk('main', 8, true);
      await mk('other', 12, true);
      await mk('incomplete', 4, false);
      const loaded: string[] = [];
      const reg = new ModelRegistry({
        modelDir: dir,
        defaultModel: 'main',
        embedding: { maxBatch: 8, batchWindowMs: 1, cacheEntries: 0 },
        load: async (_d, name) => {
          loaded.push(name);
          await new Promise((r) => setTimeout(r, 10));
          if (name === 'other') return new FakeEmbeddingModel({ name, dimension: 12, maxTokens: 128 });
          return new FakeEmbeddingModel({ name, dimension: 8, maxTokens: 128 });
        },
      });
      await reg.start();
      assert.equal(reg.ready(), true);
      assert.deepEqual(reg.list().map((m) => m.name), ['main', 'other']);
      assert.equal(reg.dimension('other'), 12);
      assert.throws(() => reg.get('incomplete'), (e: unknown) => isServiceError(e) && e.code === 'unknown_model');
      while (!reg.list().every((m) => m.ready)) await new Promise((r) => setTimeout(r, 5));
      assert.equal(reg.get('other').dimension, 12);
      assert.deepEqual(loaded, ['main', 'other']);
      await reg.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('start() rejects, saying where it looked, when the default model folder is missing', async () => {
    const reg = new ModelRegistry({ modelDir: '/nonexistent-models', defaultModel: 'm', embedding: { maxBatch: 8, batchWindowMs: 1, cacheEntries: 0 } });
    await assert.rejects(reg.start(), /\/nonexistent-models\/m/);
    assert.equal(reg.ready(), false);
  });
});

describe('bulk text on this thread (no bulk threads)', () => {
  test('a query that comes during a bulk write waits for one bulk batch at most', async () => {
    const model = new FakeEmbeddingModel({ delayMs: 10 });
    const e = new Embedder(model, { maxBatch: 4, batchWindowMs: 0, cacheEntries: 0 });
    const bulkTexts = Array.from({ length: 16 }, (_, i) => `passage ${i}`);
    const order: string[] = [];
    const bulk = e.embed(bulkTexts, { bulk: true }).then((v) => (order.push('bulk'), v));
    while (model.callCount === 0) await new Promise((r) => setTimeout(r, 1));
    const query = e.embed(['the query']).then((v) => (order.push('query'), v));
    const [bv, [qv]] = await Promise.all([bulk, query]);
    assert.deepEqual(order, ['query', 'bulk']);
    assert.deepEqual(model.calls.map((c) => c.length), [4, 1, 4, 4, 4], 'bulk in batches of maxBatch, the query right after the first');
    assert.deepEqual(model.calls[1], ['the query']);
    assert.deepEqual(qv, model.vectorOf('the query'));
    bulkTexts.forEach((t, i) => assert.deepEqual(bv[i], model.vectorOf(t)));
  });

  test('an aborted bulk call rejects with the reason and its batches not yet started are dropped', async () => {
    const model = new FakeEmbeddingModel({ delayMs: 10 });
    const e = new Embedder(model, { maxBatch: 2, batchWindowMs: 0, cacheEntries: 0 });
    const ac = new AbortController();
    const bulk = e.embed(Array.from({ length: 10 }, (_, i) => `t${i}`), { bulk: true, signal: ac.signal });
    while (model.callCount === 0) await new Promise((r) => setTimeout(r, 1));
    ac.abort(new Error('client left'));
    await assert.rejects(bulk, /client left/);
    await assert.rejects(e.embed(['x'], { bulk: true, signal: ac.signal }), /client left/, 'an aborted signal refuses at once');
    await e.close();
    assert.ok(model.callCount <= 2, `${model.callCount} model calls of 5 batches`);
  });

  test('bulk threads that cannot start leave bulk text to this thread', async () => {
    const model = new FakeEmbeddingModel();
    let starts = 0;
    const e = new Embedder(model, {
      maxBatch: 8,
      batchWindowMs: 0,
      cacheEntries: 0,
      startBulk: async () => {
        starts++;
        throw new Error('no threads here');
      },
    });
    const v = await e.embed(['a', 'b'], { bulk: true });
    await e.embed(['c'], { bulk: true });
    assert.deepEqual(v, [model.vectorOf('a'), model.vectorOf('b')]);
    assert.equal(starts, 1, 'started once, not again on every call');
    assert.equal(e.stats().bulkThreads, false);
    await e.close();
  });
});

describe('meaning (real model)', () => {
  let model: EmbeddingModel;
  let reg: ModelRegistry;
  before(async () => {
    reg = new ModelRegistry({
      modelDir: path.join(PROJECT_ROOT, 'models'),
      defaultModel: 'all-MiniLM-L6-v2',
      embedding: { maxBatch: 32, batchWindowMs: 2, cacheEntries: 128 },
    });
    await reg.start();
    model = reg.get().model;
  });
  after(async () => {
    await reg?.close();
  });

  test('a kitten on the couch is closer to a cat on a sofa than to stocks or bread', async () => {
    const e = reg.get();
    const [q, cat, stocks, bread] = await Promise.all([
      e.embed(['A kitten is sleeping on the couch']),
      e.embed(['A cat is lying on a sofa']),
      e.embed(['Stock markets fell sharply after the interest rate decision']),
      e.embed(['Knead the dough and bake the bread for forty minutes']),
    ]).then((r) => r.map((v) => v[0]));
    const sCat = dot(q, cat);
    assert.ok(sCat > dot(q, stocks) + 0.2, `cat ${sCat} vs stocks ${dot(q, stocks)}`);
    assert.ok(sCat > dot(q, bread) + 0.2, `cat ${sCat} vs bread ${dot(q, bread)}`);
    assert.equal(e.stats().calls, 1, 'the four concurrent requests shared one model call');
  });

  test('batched results equal direct model calls', async () => {
    const e = reg.get();
    const texts = ['short', 'a somewhat longer sentence about vector search engines', 'medium length text here'];
    const batched = await Promise.all(texts.map((t) => e.embed([t])));
    for (const [i, t] of texts.entries()) {
      const direct = (await model.embed([t])).vectors[0];
      assert.ok(dot(batched[i][0], direct) > 0.99999);
    }
  });
});
