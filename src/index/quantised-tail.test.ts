import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { QuantisedTail } from './quantised-tail.ts';
import { rescore } from './exact.ts';
import { exactScore } from './metric.ts';

function rng(seed: number): () => number {
  return () => (seed = (seed * 16807) % 2147483647) / 2147483647;
}

/** Clustered rows, like a real embedding table: near-ties inside each cluster. */
function clustered(n: number, d: number, seed: number): Map<number, Float32Array> {
  const r = rng(seed);
  const centres = Array.from({ length: 16 }, () => Float32Array.from({ length: d }, () => r() - 0.5));
  const rows = new Map<number, Float32Array>();
  for (let i = 0; i < n; i++) {
    const c = centres[i % centres.length];
    rows.set(i * 7 + 3, Float32Array.from(c, (x) => x + (r() - 0.5) * 0.4));
  }
  return rows;
}

function truth(rows: Map<number, Float32Array>, q: Float32Array, k: number): number[] {
  return [...rows]
    .map(([id, v]) => ({ id, s: exactScore('cosine', q, v) }))
    .sort((a, b) => b.s - a.s || a.id - b.id)
    .slice(0, k)
    .map((x) => x.id);
}

describe('quantised tail', () => {
  it('proposes candidates whose exact re-scoring finds the true top 10', () => {
    const d = 64;
    const rows = clustered(5_000, d, 11);
    const tail = new QuantisedTail(d);
    for (const [id, v] of rows) tail.set(id, v);
    assert.equal(tail.size, rows.size);
    const r = rng(5);
    let hit = 0;
    const queries = 40;
    for (let t = 0; t < queries; t++) {
      const base = rows.get(((t * 131) % rows.size) * 7 + 3)!;
      const q = Float32Array.from(base, (x) => x + (r() - 0.5) * 0.2);
      const cands = tail.searchScored(q, 36).keys;
      assert.equal(cands.length, 36);
      const got = rescore(q, cands, { get: (id) => rows.get(id) }, 'cosine', 10).map((s) => s.rowId);
      const want = new Set(truth(rows, q, 10));
      hit += got.filter((id) => want.has(id)).length;
    }
    // int8 rounding can swap near-ties at the edge of the candidates, rarely.
    assert.ok(hit / (queries * 10) >= 0.99, `recall ${hit / (queries * 10)}`);
  });

  it('answers for what it holds now: deleted rows leave, overwritten rows move', () => {
    const d = 16;
    const tail = new QuantisedTail(d);
    const unit = (i: number) => Float32Array.from({ length: d }, (_, j) => (j === i ? 1 : 0));
    for (let i = 0; i < d; i++) tail.set(100 + i, unit(i));
    assert.deepEqual(tail.searchScored(unit(3), 1).keys, [103]);
    assert.ok(tail.delete(103));
    assert.ok(!tail.delete(103));
    assert.ok(!tail.searchScored(unit(3), d).keys.includes(103));
    assert.equal(tail.size, d - 1);
    // Row 105 now points where 103 did: it is found there, and no longer at its old place.
    tail.set(105, unit(3));
    assert.deepEqual(tail.searchScored(unit(3), 1).keys, [105]);
    assert.notEqual(tail.searchScored(unit(5), 1).keys[0], 105);
    assert.equal(tail.size, d - 1);
  });

  it('grows past its first buffer and gives the memory back once emptied', () => {
    const d = 8;
    const tail = new QuantisedTail(d);
    const small = tail.bytes;
    const r = rng(9);
    const ids: number[] = [];
    for (let i = 0; i < 5_000; i++) {
      tail.set(i, Float32Array.from({ length: d }, () => r() - 0.5));
      ids.push(i);
    }
    assert.ok(tail.bytes > small);
    const v = Float32Array.from({ length: d }, (_, j) => j + 1);
    tail.set(4_321, v);
    assert.equal(tail.searchScored(v, 1).keys[0], 4_321);
    for (const id of ids) tail.delete(id);
    assert.equal(tail.size, 0);
    assert.equal(tail.bytes, small);
    assert.deepEqual(tail.searchScored(v, 5).keys, []);
  });

  it('keeps zero vectors without dividing by zero', () => {
    const tail = new QuantisedTail(4);
    tail.set(1, new Float32Array(4));
    tail.set(2, Float32Array.of(1, 0, 0, 0));
    assert.deepEqual(tail.searchScored(Float32Array.of(1, 0, 0, 0), 1).keys, [2]);
  });
});
