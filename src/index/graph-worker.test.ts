import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Index, ScalarKind } from 'usearch';
import { AnnIndex } from './ann.ts';
import { ANN_PARAMS } from './graph-params.ts';
import { usearchMetric } from './exact.ts';
import { newGraphClaims } from './graph-claims.ts';
import { GraphWorker, type WorkerAnswer } from './graph-worker.ts';

const d = 16;
function rows(n: number, seed: number): Float32Array {
  return Float32Array.from({ length: n * d }, () => ((seed = (seed * 16807) % 2147483647) / 2147483647) - 0.5);
}

describe('GraphWorker', () => {
  let dir: string;
  const graphs: AnnIndex[] = [];
  const files: string[] = [];
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-gw-'));
    for (let g = 0; g < 4; g++) {
      const ann = AnnIndex.create(d, 'cosine');
      ann.add(Array.from({ length: 500 }, (_, i) => g * 1000 + i), rows(500, g + 7));
      files.push(path.join(dir, `${g}.usearch`));
      await ann.writeFile(files[g]);
      graphs.push(ann);
    }
  });
  after(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('walks only the graphs it claims, and says which it could not open', async () => {
    const worker = new GraphWorker();
    try {
      const params = { dimension: d, metric: 'cosine' as const };
      const stdin = fsSync.fstatSync(0);
      worker.sync(graphs, [...files.map((file, i) => ({ id: i + 1, file, ...params })), { id: 9, file: path.join(dir, 'absent.usearch'), ...params }]);
      while (worker.syncing) await new Promise((r) => setTimeout(r, 5));
      assert.deepEqual([1, 2, 3, 4, 9].map((id) => worker.isReady(id)), [true, true, true, true, false]);
      // The absent file left the process's descriptors alone (usearch closes fd 0 when it cannot open one).
      const after = fsSync.fstatSync(0);
      assert.deepEqual([after.dev, after.ino], [stdin.dev, stdin.ino]);
      const q = rows(1, 99);
      const ids = [1, 2, 3, 4];
      const plain = (a: WorkerAnswer) => ('missing' in a ? a : { index: a.index, keys: Array.from(a.keys), distances: Array.from(a.distances) });
      /** What graph `g` answers, at position `index` of the list searched. */
      const expect = (g: number, index = g) => {
        const r = graphs[g].searchScored(q, 20);
        return { index, keys: Array.from(r.keys), distances: Array.from(r.distances) };
      };

      // Someone else already took the first two.
      const claims = newGraphClaims();
      claims[0] = 2;
      assert.deepEqual((await worker.search(ids, q, 20, claims)).map(plain), [expect(2), expect(3)]);
      assert.ok(claims[0] >= ids.length, 'every graph is taken');

      const none = newGraphClaims();
      none[0] = 4;
      assert.deepEqual(await worker.search(ids, q, 20, none), []);

      assert.deepEqual((await worker.search([9, 1], q, 20, newGraphClaims())).map(plain), [{ index: 0, missing: true }, expect(0, 1)]);
    } finally {
      await worker.close();
    }
  });

  it('walks a graph saved with bf16 copies as it was saved (cosine graphs are int8 since)', async () => {
    const old = new Index({ dimensions: d, metric: usearchMetric('cosine'), quantization: ScalarKind.BF16, connectivity: ANN_PARAMS.connectivity, expansion_add: ANN_PARAMS.expansionAdd, expansion_search: ANN_PARAMS.expansionSearch, multi: false });
    old.add(BigUint64Array.from({ length: 500 }, (_, i) => BigInt(i)), rows(500, 3), 0);
    const file = path.join(dir, 'old-bf16.usearch');
    old.save(file);
    const worker = new GraphWorker();
    try {
      worker.sync({}, [{ id: 1, file, dimension: d, metric: 'cosine' }]);
      while (worker.syncing) await new Promise((r) => setTimeout(r, 5));
      const q = rows(1, 42);
      const want = old.search(q, 20, 1);
      const [got] = await worker.search([1], q, 20, newGraphClaims());
      assert.ok(!('missing' in got));
      assert.deepEqual(Array.from(got.keys), Array.from(want.keys, Number));
      assert.deepEqual(Array.from(got.distances), Array.from(want.distances));
    } finally {
      await worker.close();
    }
  });
});
