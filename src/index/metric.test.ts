import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { exactScore, exactScores, METRICS } from './metric.ts';

function rng(seed: number): () => number {
  return () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
}

describe('exactScores', () => {
  for (const metric of METRICS) {
    it(`gives exactScore's value bit for bit, in groups of four and the rest (${metric})`, () => {
      const r = rng(7);
      for (const d of [1, 3, 384]) {
        const query = Float32Array.from({ length: d }, () => (r() - 0.5) * 3);
        // 0..9 rows covers no group, whole groups and every remainder; a zero row and the query itself among them.
        for (let count = 0; count <= 9; count++) {
          const rows = Array.from({ length: count }, (_, i) => (i === 2 ? new Float32Array(d) : i === 5 ? query : Float32Array.from({ length: d }, () => (r() - 0.5) * (1 + i))));
          const out = new Float64Array(count).fill(NaN);
          exactScores(metric, query, rows, out);
          rows.forEach((row, i) => assert.ok(Object.is(out[i], exactScore(metric, query, row)), `${metric}, d ${d}, row ${i} of ${count}: ${out[i]} against ${exactScore(metric, query, row)}`));
        }
      }
    });
  }

  it('scores a zero query 0 by cosine, as exactScore does', () => {
    const rows = Array.from({ length: 5 }, (_, i) => Float32Array.from({ length: 8 }, (_, j) => i + j));
    const out = new Float64Array(5).fill(NaN);
    exactScores('cosine', new Float32Array(8), rows, out);
    assert.deepEqual([...out], [0, 0, 0, 0, 0]);
  });
});
