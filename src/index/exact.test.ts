import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SegmentedMatrix } from './matrix.ts';
import { compareScored, exactSearchMatrix, exactTopK, rescore } from './exact.ts';
import { compareScores, exactScore, METRICS, type Metric } from './metric.ts';

function rng(seed: number): () => number {
  return () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
}

function brute(rows: Map<number, Float32Array>, q: Float32Array, metric: Metric, limit: number, only?: Set<number>) {
  const all = [...rows].filter(([id]) => !only || only.has(id)).map(([rowId, v]) => ({ rowId, score: exactScore(metric, q, v) }));
  const cmp = compareScores(metric);
  return all.sort((a, b) => cmp(a, b) || a.rowId - b.rowId).slice(0, limit);
}

describe('exact search', () => {
  for (const metric of METRICS) {
    it(`equals brute force across segments (${metric})`, () => {
      const r = rng(3);
      const d = 24;
      const m = new SegmentedMatrix(d, 300);
      const rows = new Map<number, Float32Array>();
      for (let i = 0; i < 1000; i++) {
        const v = Float32Array.from({ length: d }, () => (r() - 0.5) * (1 + (i % 7)));
        m.set(i * 3 + 1, v);
        rows.set(i * 3 + 1, v);
      }
      // duplicates and a zero row: ties must not break exactness
      for (const id of [5000, 5001, 5002]) {
        m.set(id, rows.get(1)!);
        rows.set(id, rows.get(1)!);
      }
      m.set(6000, new Float32Array(d));
      rows.set(6000, new Float32Array(d));
      for (let t = 0; t < 20; t++) {
        const q = t === 0 ? rows.get(1)!.slice() : Float32Array.from({ length: d }, () => r() - 0.5);
        for (const limit of [1, 10, 57]) {
          const got = exactSearchMatrix(m, q, metric, limit);
          const want = brute(rows, q, metric, limit);
          assert.deepEqual(got.map((x) => x.rowId), want.map((x) => x.rowId));
          got.forEach((g, i) => assert.ok(Math.abs(g.score - want[i].score) < 1e-9));
        }
      }
    });
  }

  it('restricts the scan to allowed rows', () => {
    const r = rng(9);
    const d = 8;
    const m = new SegmentedMatrix(d, 64);
    const rows = new Map<number, Float32Array>();
    for (let i = 0; i < 700; i++) {
      const v = Float32Array.from({ length: d }, () => r() - 0.5);
      m.set(i, v);
      rows.set(i, v);
    }
    const only = new Set([...rows.keys()].filter((id) => id % 3 === 0));
    const q = Float32Array.from({ length: d }, () => r() - 0.5);
    const got = exactSearchMatrix(m, q, 'euclidean', 20, [...only, 99999]);
    assert.deepEqual(got.map((x) => x.rowId), brute(rows, q, 'euclidean', 20, only).map((x) => x.rowId));
  });

  it('handles a zero cosine query and a query view at an offset', () => {
    const m = new SegmentedMatrix(4, 512);
    for (let i = 0; i < 1000; i++) m.set(1000 - i, Float32Array.of(i, 1, 2, 3));
    const zero = exactSearchMatrix(m, new Float32Array(4), 'cosine', 3);
    assert.deepEqual(zero, [{ rowId: 1, score: 0 }, { rowId: 2, score: 0 }, { rowId: 3, score: 0 }]);
    const buf = Float32Array.of(9, 9, 9, 500, 1, 2, 3);
    const got = exactSearchMatrix(m, buf.subarray(3), 'euclidean', 1);
    assert.deepEqual(got, [{ rowId: 500, score: 0 }]);
  });

  it('rescore scores given rows exactly, skipping missing and duplicate ids', () => {
    const m = new SegmentedMatrix(2, 4);
    m.set(1, Float32Array.of(1, 0));
    m.set(2, Float32Array.of(0, 1));
    m.set(3, Float32Array.of(1, 1));
    const got = rescore(Float32Array.of(1, 0.1), [2, 3, 3, 1, 77], m, 'dot_product', 2);
    assert.deepEqual(got.map((x) => x.rowId), [3, 1]);
    assert.ok(Math.abs(got[0].score - (1 + Math.fround(0.1))) < 1e-12);
  });
});

describe('exactTopK with rows excluded', () => {
  it('answers the exact best of the rows not excluded, however many are', () => {
    const d = 8;
    const n = 3000;
    let seed = 7;
    const rand = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
    const vectors = Float32Array.from({ length: n * d }, rand);
    const rowIds = Array.from({ length: n }, (_, i) => i + 100);
    const query = Float32Array.from({ length: d }, rand);
    for (const share of [0.1, 0.9, 0.995]) {
      const exclude = new Set(rowIds.filter(() => rand() < share * 2 - 1));
      const want = rowIds
        .filter((id) => !exclude.has(id))
        .map((id) => ({ rowId: id, score: exactScore('cosine', query, vectors.subarray((id - 100) * d, (id - 99) * d)) }))
        .sort(compareScored('cosine'))
        .slice(0, 10);
      for (const hint of [0, exclude.size / n]) {
        const got = exactTopK([{ vectors, rowIds: Float64Array.from(rowIds) }], query, 'cosine', 10, exclude, hint);
        assert.deepEqual(got.map((x) => x.rowId), want.map((x) => x.rowId), `share ${share}, hint ${hint}`);
      }
    }
  });

  it('packs the kept rows of many blocks across its own block boundaries (a large share excluded)', () => {
    const d = 4;
    let seed = 11;
    const rand = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
    const sizes = [9000, 300, 12000];
    let next = 1;
    const blocks = sizes.map((n) => ({ vectors: Float32Array.from({ length: n * d }, rand), rowIds: Float64Array.from({ length: n }, () => next++) }));
    const query = Float32Array.from({ length: d }, rand);
    // A third excluded, but a hint over the packing threshold: more than one packed block of kept rows.
    const exclude = new Set<number>();
    for (let id = 1; id < next; id++) if (id % 3 === 0) exclude.add(id);
    const want = blocks
      .flatMap((b) => Array.from(b.rowIds, (id, i) => ({ rowId: id, score: exactScore('cosine', query, b.vectors.subarray(i * d, i * d + d)) })))
      .filter((x) => !exclude.has(x.rowId))
      .sort(compareScored('cosine'))
      .slice(0, 25);
    const got = exactTopK(blocks, query, 'cosine', 25, exclude, 0.9);
    assert.deepEqual(got.map((x) => x.rowId), want.map((x) => x.rowId));
  });
});
