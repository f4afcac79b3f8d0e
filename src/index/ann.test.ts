import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { digestFile } from '../platform/file-digest.ts';
import { Index, MetricKind, ScalarKind } from 'usearch';
import { AnnIndex } from './ann.ts';
import { ANN_PARAMS, graphQuantization } from './graph-params.ts';
import { SegmentedMatrix } from './matrix.ts';
import { exactSearchMatrix } from './exact.ts';
import { tempDirForSuite } from '../platform/temp-dir-test-support.ts';

function rng(seed: number): () => number {
  return () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
}

function clustered(n: number, d: number, seed: number): Float32Array {
  const r = rng(seed);
  const g = (): number => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  const centers = Float32Array.from({ length: 50 * d }, g);
  const out = new Float32Array(n * d);
  for (let i = 0; i < n; i++) {
    const c = Math.floor(r() * 50);
    for (let j = 0; j < d; j++) out[i * d + j] = centers[c * d + j] + 0.6 * g();
  }
  return out;
}

describe('AnnIndex', () => {
  const dir = tempDirForSuite('vss-ann-');

  const d = 32;
  const n = 3000;
  const data = clustered(n, d, 11);
  const ids = Float64Array.from({ length: n }, (_, i) => i * 2 + 7);

  it('finds nearly all true neighbours, upserts and removes', () => {
    const ann = AnnIndex.create(d, 'cosine');
    ann.add(ids, data);
    assert.equal(ann.size, n);
    const m = new SegmentedMatrix(d);
    ids.forEach((id, i) => m.set(id, data.subarray(i * d, i * d + d)));
    const r = rng(5);
    let hit = 0;
    for (let t = 0; t < 50; t++) {
      const q = data.slice(Math.floor(r() * n) * d).subarray(0, d).map((x) => x + (r() - 0.5) * 0.2);
      const truth = exactSearchMatrix(m, q, 'cosine', 10).map((x) => x.rowId);
      const got = new Set(ann.search(q, 100));
      hit += truth.filter((x) => got.has(x)).length;
    }
    assert.ok(hit / 500 >= 0.95, `recall ${hit / 500}`);

    // upsert: same key, new vector; no duplicate, found by the new vector
    const v = Float32Array.from({ length: d }, (_, i) => (i === 0 ? 100 : 0));
    ann.add([ids[0]], v);
    assert.equal(ann.size, n);
    assert.equal(ann.search(v, 1)[0], ids[0]);
    ann.remove([ids[0], 999_999]);
    assert.equal(ann.size, n - 1);
    assert.ok(!ann.search(v, 20).includes(ids[0]));
    assert.deepEqual(AnnIndex.create(d, 'euclidean').search(v, 5), []);
  });

  it('takes a batch on all cores after small batches grew it (usearch keeps per-thread state from each growth)', { skip: os.availableParallelism() < 2 && 'needs two cores' }, () => {
    const d = 16;
    const data = clustered(300, d, 11);
    const ann = AnnIndex.create(d, 'cosine');
    // Small batches (one thread each) that grow the graph: to 64, 128 and 256 rows of room.
    let next = 0;
    for (const n of [63, 63, 10]) {
      ann.add(Array.from({ length: n }, (_, i) => next + i), data.subarray(next * d, (next + n) * d));
      next += n;
    }
    // 64 rows fit the room left, so this call does not grow the graph and runs on every core.
    ann.add(Array.from({ length: 64 }, (_, i) => next + i), data.subarray(next * d, (next + 64) * d));
    assert.equal(ann.size, next + 64);
  });

  it('copes with components far beyond half-precision range', () => {
    const ann = AnnIndex.create(4, 'dot_product');
    const big = Float32Array.from({ length: 400 }, (_, i) => (i % 4 === 0 ? 1e6 * (1 + (i >> 2)) : 1));
    ann.add(Float64Array.from({ length: 100 }, (_, i) => i), big);
    assert.equal(ann.search(Float32Array.of(1, 0, 0, 0), 1)[0], 99);
  });

  it('writes a file, opens it in memory or as a view, and refuses damaged or foreign files without crashing', async () => {
    const ann = AnnIndex.create(d, 'euclidean');
    ann.add(ids, data);
    const file = path.join(dir(), '1.usearch');
    const digest = await ann.writeFile(file);
    assert.deepEqual(digest, await digestFile(file));
    const q = data.subarray(0, d);
    const expect = { dimension: d, metric: 'euclidean' as const, size: n, digest };
    for (const how of ['load', 'view'] as const) {
      const opened = await AnnIndex.open(file, expect, how);
      assert.ok(opened, how);
      assert.equal(opened.size, n);
      assert.equal(opened.viewed, how === 'view');
      assert.deepEqual(opened.search(q, 10), ann.search(q, 10));
    }
    const view = await AnnIndex.open(file, expect, 'view');
    assert.throws(() => view!.add([1], q), /read-only/);

    assert.equal(await AnnIndex.open(path.join(dir(), 'missing.usearch'), expect, 'load'), null);
    assert.equal(await AnnIndex.open(file, { ...expect, dimension: d + 1 }, 'load'), null);
    assert.equal(await AnnIndex.open(file, { ...expect, size: n - 1 }, 'load'), null);
    assert.equal(await AnnIndex.open(file, { ...expect, digest: { ...digest, sha256: '0'.repeat(64) } }, 'view'), null);

    // A graph built with other parameters (an older version's) is not the one described: rebuilt.
    const older = new Index({ dimensions: d, metric: MetricKind.L2sq, quantization: ScalarKind.BF16, connectivity: ANN_PARAMS.connectivity / 2, expansion_add: 64, expansion_search: 64, multi: false });
    older.add(BigUint64Array.from(ids, (x) => BigInt(x)), data);
    const olderFile = path.join(dir(), 'older.usearch');
    older.save(olderFile);
    const olderExpect = { ...expect, digest: await digestFile(olderFile) };
    assert.equal(await AnnIndex.open(olderFile, olderExpect, 'view'), null);
    assert.equal(await AnnIndex.open(olderFile, olderExpect, 'load'), null);

    const good = await fs.readFile(file);
    await fs.writeFile(file, good.subarray(0, good.length >> 1));
    assert.equal(await AnnIndex.open(file, expect, 'view'), null, 'truncated');
    const garbage = Buffer.from(good);
    for (let i = 0; i < garbage.length; i += 13) garbage[i] ^= 0x5a;
    await fs.writeFile(file, garbage);
    assert.equal(await AnnIndex.open(file, expect, 'load'), null, 'garbage');
    const left = await fs.readdir(dir());
    assert.ok(left.every((f) => !f.endsWith('.tmp')), `temp files left: ${left}`);
  });

  it('keeps one byte a component for cosine tables and two for the others', async () => {
    // usearch writes the row copies first, after their count and their width in bytes.
    const widths: Record<string, number> = {};
    for (const metric of ['cosine', 'dot_product', 'euclidean'] as const) {
      const ann = AnnIndex.create(d, metric);
      ann.add(ids, data);
      const file = path.join(dir(), `width-${metric}.usearch`);
      await ann.writeFile(file);
      const head = (await fs.readFile(file)).subarray(0, 8);
      assert.equal(head.readUInt32LE(0), n);
      widths[metric] = head.readUInt32LE(4);
    }
    assert.deepEqual(widths, { cosine: d, dot_product: 2 * d, euclidean: 2 * d });
    assert.deepEqual([graphQuantization('cosine'), graphQuantization('dot_product'), graphQuantization('euclidean')], ['i8', 'bf16', 'bf16']);
  });

  it('opens a graph saved with another scalar kind as it was saved (bf16 graphs from before int8 ones)', async () => {
    const old = new Index({ dimensions: d, metric: MetricKind.Cos, quantization: ScalarKind.BF16, connectivity: ANN_PARAMS.connectivity, expansion_add: ANN_PARAMS.expansionAdd, expansion_search: ANN_PARAMS.expansionSearch, multi: false });
    old.add(BigUint64Array.from(ids, (x) => BigInt(x)), data, 0);
    const file = path.join(dir(), 'old-bf16.usearch');
    old.save(file);
    const want = Array.from({ length: 20 }, (_, q) => Array.from(old.search(data.subarray(q * 7 * d, (q * 7 + 1) * d), 10, 1).keys, Number));
    for (const how of ['view', 'load'] as const) {
      const ann = await AnnIndex.open(file, { dimension: d, metric: 'cosine', size: n, digest: await digestFile(file) }, how);
      assert.ok(ann, how);
      // usearch takes the kind from the file: the same bf16 walk, not int8 reads of bf16 bytes.
      assert.deepEqual(Array.from({ length: 20 }, (_, q) => ann.search(data.subarray(q * 7 * d, (q * 7 + 1) * d), 10)), want, how);
    }
    assert.equal(graphQuantization('cosine'), ScalarKind.I8);
  });

  it('becomes a view of its own file without changing its answers', async () => {
    const ann = AnnIndex.create(d, 'cosine');
    ann.add(ids, data);
    const q = data.subarray(5 * d, 6 * d);
    const before = ann.search(q, 20);
    const file = path.join(dir(), 'own.usearch');
    const plain = path.join(dir(), 'own-plain.usearch');
    const digest = await ann.writeFile(file, { forMapping: true });
    // The block copy holds exactly what usearch wrote, and no temp file is left behind.
    assert.deepEqual(await ann.writeFile(plain), digest);
    assert.deepEqual(await digestFile(file), digest);
    assert.deepEqual((await fs.readdir(dir())).filter((f) => f.startsWith('own')).sort(), ['own-plain.usearch', 'own.usearch']);
    ann.becomeView(file);
    assert.ok(ann.viewed);
    assert.equal(ann.size, n);
    assert.deepEqual(ann.search(q, 20), before);
    assert.deepEqual(ann.containsMany([ids[0], 1]), [true, false]);
  });
});
