import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PROJECT_ROOT } from '../config/config.ts';
import { callGroups, loadModel, warmUpShapes, type EmbeddingModel } from './model.ts';

const MODEL_DIR = path.join(PROJECT_ROOT, 'models');
const NAME = 'all-MiniLM-L6-v2';

interface RefItem {
  text: string;
  tokens: number;
  vector: number[];
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
};

describe('all-MiniLM-L6-v2', () => {
  let model: EmbeddingModel;
  let items: RefItem[];

  before(async () => {
    const t0 = performance.now();
    model = await loadModel(MODEL_DIR, NAME);
    const ms = performance.now() - t0;
    console.log(`load ${ms.toFixed(0)} ms`);
    items = JSON.parse(await readFile(path.join(MODEL_DIR, NAME, 'reference', 'vectors.json'), 'utf8')).items;
  });
  after(async () => {
    await model?.dispose();
  });

  test('reads dimension and max tokens from the model folder', () => {
    assert.equal(model.name, NAME);
    assert.equal(model.dimension, 384);
    assert.equal(model.maxTokens, 256);
  });

  test('makes the warm-up calls before its first call past a short query, not at load', async () => {
    const pending = () => (model as unknown as { pendingWarmUp: readonly unknown[] }).pendingWarmUp.length;
    assert.ok(pending() > 0, 'not warmed at load');
    await model.embed(['a short query']);
    assert.ok(pending() > 0, 'a short query does not warm');
    await model.embed(new Array<string>(20).fill('a sentence of several words for a batch'));
    assert.equal(pending(), 0, 'the first batch warms');
  });

  test('matches the reference vectors (one batch) and token counts', async () => {
    assert.ok(items.length >= 40);
    const { vectors, tokens } = await model.embed(items.map((i) => i.text));
    let min = 1;
    for (const [i, it] of items.entries()) {
      assert.equal(vectors[i].length, 384);
      const cos = dot(vectors[i], it.vector);
      min = Math.min(min, cos);
      assert.ok(cos >= 0.9999, `cosine ${cos} for item ${i} ${JSON.stringify(it.text.slice(0, 40))}`);
      assert.equal(tokens[i], it.tokens, `tokens of item ${i}`);
      assert.equal(model.countTokens(it.text), it.tokens, `countTokens of item ${i}`);
    }
    console.log(`fidelity: min cosine ${min} over ${items.length} texts`);
  });

  test('one text at a time gives the same vectors as a padded batch', async () => {
    for (const [i, it] of items.entries()) {
      const { vectors } = await model.embed([it.text]);
      assert.ok(dot(vectors[0], it.vector) >= 0.9999, `item ${i}`);
    }
  });

  test('vectors are unit length', async () => {
    const { vectors } = await model.embed(['hello', '']);
    for (const v of vectors) assert.ok(Math.abs(Math.sqrt(dot(v, v)) - 1) < 1e-5);
  });

  test('empty and whitespace-only texts give [CLS][SEP]', async () => {
    const { vectors, tokens } = await model.embed(['', '   ', '\n\t']);
    assert.deepEqual(tokens, [2, 2, 2]);
    assert.ok(dot(vectors[0], vectors[1]) > 0.99999);
    assert.ok(dot(vectors[0], vectors[2]) > 0.99999);
    assert.deepEqual(model.tokenize('  ').ids, []);
    assert.equal(model.countTokens(''), 2);
  });

  test('tokenize gives word pieces without specials or truncation', () => {
    assert.deepEqual(model.tokenize('Hello world').ids, [7592, 2088]);
    const long = 'token '.repeat(600);
    assert.equal(model.tokenize(long).ids.length, 600);
    assert.equal(model.countTokens(long), 256);
  });

  test('a long text keeps [CLS] + first 254 pieces + [SEP] (the final [SEP] is not dropped)', async () => {
    const vocab = ['apple', 'house', 'river', 'green', 'music', 'table', 'water', 'light', 'stone', 'cloud'];
    for (const w of vocab) assert.equal(model.tokenize(w).ids.length, 1, w);
    const words = Array.from({ length: 300 }, (_, i) => vocab[(i * 7 + (i >> 3)) % vocab.length]);
    const full = words.join(' ');
    const cut = words.slice(0, 254).join(' ');
    assert.equal(model.tokenize(full).ids.length, 300);
    assert.equal(model.countTokens(full), 256);
    assert.equal(model.countTokens(cut), 256);
    const a = (await model.embed([full])).vectors[0];
    const b = (await model.embed([cut])).vectors[0];
    // Same model input ids, so (near) bit-identical vectors.
    assert.ok(dot(a, b) > 0.999999, `cosine ${dot(a, b)}`);
    // One piece fewer already differs, so the check above is sharp.
    const c = (await model.embed([words.slice(0, 253).join(' ')])).vectors[0];
    assert.ok(dot(a, c) < 0.999999);
  });

  test('embed([]) is empty', async () => {
    assert.deepEqual(await model.embed([]), { vectors: [], tokens: [] });
  });
});

describe('the per-call budget', () => {
  test('callGroups keeps a batch within the budget whole and in order', () => {
    assert.deepEqual(callGroups([5, 3, 9], { tokens: 27, attention: 243 }), [[0, 1, 2]]);
  });

  test('callGroups splits by length, each call within both bounds, every text once', () => {
    const tokens = Array.from({ length: 100 }, (_, i) => 2 + ((i * 37) % 255));
    const budget = { tokens: 1024, attention: 1024 * 64 };
    const groups = callGroups(tokens, budget);
    assert.ok(groups.length > 1);
    assert.deepEqual(groups.flat().sort((a, b) => a - b), tokens.map((_, i) => i));
    for (const g of groups) {
      const longest = Math.max(...g.map((i) => tokens[i]));
      assert.ok(g.length * longest <= budget.tokens, `${g.length} rows of ${longest}`);
      assert.ok(g.length * longest * longest <= budget.attention, `${g.length} rows of ${longest}²`);
    }
  });

  test('the warm-up calls are real call shapes and reach the most tokens, attention and length of any', () => {
    for (const [budget, maxTokens, maxRows] of [
      [{ tokens: 4096, attention: 4096 * 128 }, 256, 32],
      [{ tokens: 1024, attention: 1024 * 64 }, 256, 32],
      [{ tokens: 4096, attention: 4096 * 128 }, 512, 8],
      [{ tokens: 512, attention: 65_536 }, 128, 512],
    ] as const) {
      const shapes = warmUpShapes(budget, maxTokens, maxRows);
      const what = `${JSON.stringify(budget)}, ${maxTokens} tokens, ${maxRows} rows: ${JSON.stringify(shapes)}`;
      for (const s of shapes) {
        assert.ok(s.rows <= maxRows && s.length <= maxTokens, what);
        assert.equal(callGroups(new Array<number>(s.rows).fill(s.length), budget).length, 1, `one call: ${what}`);
      }
      const most = (f: (rows: number, length: number) => number) => Math.max(...shapes.map((s) => f(s.rows, s.length)));
      // Every shape the Embedder and callGroups can make: its rows cut by the budget at each length.
      for (let length = 2; length <= maxTokens; length++) {
        const rows = Math.min(maxRows, callGroups(new Array<number>(maxRows).fill(length), budget)[0].length);
        assert.ok(rows * length <= most((r, l) => r * l), `tokens of ${rows} × ${length}: ${what}`);
        assert.ok(rows * length * length <= most((r, l) => r * l * l), `attention of ${rows} × ${length}: ${what}`);
      }
      assert.equal(most((_, l) => l), maxTokens, what);
    }
  });

  test('a text longer than the budget still gets a call of its own', () => {
    assert.deepEqual(callGroups([300, 10], { tokens: 256, attention: 65_536 }), [[1], [0]]);
  });

  test('a batch split by a small budget gives the same vectors as one call', async () => {
    const words = 'the quick brown fox jumps over a lazy dog while rivers carry silt to the sea'.split(' ');
    const texts = Array.from({ length: 40 }, (_, i) => Array.from({ length: 1 + ((i * 29) % 180) }, (_, k) => words[(i + k) % words.length]).join(' '));
    const whole = await loadModel(MODEL_DIR, NAME, { callTokens: 1_000_000, callAttention: 1e12 });
    const split = await loadModel(MODEL_DIR, NAME, { callTokens: 512, callAttention: 65_536 });
    try {
      const a = await whole.embed(texts);
      const b = await split.embed(texts);
      assert.deepEqual(b.tokens, a.tokens);
      assert.ok(callGroups(a.tokens, { tokens: 512, attention: 65_536 }).length > 4, 'the small budget splits this batch');
      for (let i = 0; i < texts.length; i++) {
        for (let d = 0; d < whole.dimension; d++) assert.ok(Math.abs(a.vectors[i][d] - b.vectors[i][d]) < 1e-5, `text ${i} dim ${d}`);
      }
    } finally {
      await whole.dispose();
      await split.dispose();
    }
  });
});

describe('loading checks', () => {
  let tmp: string;
  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'vss-model-'));
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  /** A copy of the model folder with the big ONNX file symlinked. */
  async function copyModel(dirName: string): Promise<string> {
    const src = path.join(MODEL_DIR, NAME);
    const dst = path.join(tmp, dirName, NAME);
    await cp(src, dst, { recursive: true, filter: (s) => !s.endsWith(`${path.sep}model.onnx`) });
    await symlink(path.join(src, 'onnx', 'model.onnx'), path.join(dst, 'onnx', 'model.onnx'));
    return dst;
  }

  test('a missing folder says where it looked', async () => {
    await assert.rejects(loadModel(tmp, 'no-such-model'), (e: Error) => {
      assert.match(e.message, /no-such-model/);
      assert.ok(e.message.includes(path.join(tmp, 'no-such-model')), e.message);
      return true;
    });
  });

  test('a file that does not match SHA256SUMS fails the load, naming the file', async () => {
    const dir = await copyModel('tampered');
    const cfgFile = path.join(dir, 'config.json');
    const cfg = JSON.parse(await readFile(cfgFile, 'utf8'));
    cfg.layer_norm_eps = 1e-11;
    await writeFile(cfgFile, JSON.stringify(cfg, null, 2));
    await assert.rejects(loadModel(path.dirname(dir), NAME), /config\.json.*SHA256SUMS/);
  });

  test('a file listed in SHA256SUMS but missing fails the load, naming the file', async () => {
    const dir = await copyModel('missing');
    await unlink(path.join(dir, 'vocab.txt'));
    await assert.rejects(loadModel(path.dirname(dir), NAME), /vocab\.txt/);
  });

  test('a missing SHA256SUMS fails the load', async () => {
    const dir = await copyModel('nosums');
    await unlink(path.join(dir, 'SHA256SUMS'));
    await assert.rejects(loadModel(path.dirname(dir), NAME), /SHA256SUMS/);
  });

  test('a config.json whose hidden size is not the graph\'s fails the load, naming both', async () => {
    const dir = await copyModel('wrong-size');
    const cfgFile = path.join(dir, 'config.json');
    const cfg = JSON.parse(await readFile(cfgFile, 'utf8'));
    cfg.hidden_size = 100;
    const text = JSON.stringify(cfg, null, 2);
    await writeFile(cfgFile, text);
    // Re-sign it, so that only the size is wrong.
    const sums = path.join(dir, 'SHA256SUMS');
    const hash = createHash('sha256').update(text).digest('hex');
    await writeFile(sums, (await readFile(sums, 'utf8')).replace(/^[0-9a-f]{64}(\s+\*?(?:\.\/)?config\.json)$/m, `${hash}$1`));
    await assert.rejects(loadModel(path.dirname(dir), NAME), /onnx.model\.onnx.*100-dimensional/);
  });

  test('an intact copy loads', async () => {
    const dir = await copyModel('intact');
    const m = await loadModel(path.dirname(dir), NAME);
    try {
      const { tokens } = await m.embed(['ok']);
      assert.deepEqual(tokens, [3]);
    } finally {
      await m.dispose();
    }
  });
});
