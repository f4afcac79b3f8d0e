import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fuse, type Fused } from './fusion.ts';

const SEMANTIC = [
  { key: 'a', score: 0.9 },
  { key: 'b', score: 0.8 },
  { key: 'c', score: 0.7 },
];
const LEXICAL = [
  { key: 'c', score: 12 },
  { key: 'd', score: 10 },
  { key: 'a', score: 5 },
];

function assertFused(actual: Fused[], expected: [string, number, number | null, number | null][]): void {
  assert.deepEqual(actual.map((f) => f.key), expected.map(([k]) => k));
  actual.forEach((f, i) => {
    const [key, score, semantic, lexical] = expected[i]!;
    assert.ok(Math.abs(f.score - score) < 1e-12, `${key}: score ${f.score}, expected ${score}`);
    assert.equal(f.semantic, semantic, `${key}: semantic`);
    assert.equal(f.lexical, lexical, `${key}: lexical`);
  });
}

describe('fuse, rrf', () => {
  it('sums 1/(k + rank) over the lists, ties by key', () => {
    // a: ranks 1 and 3, c: 3 and 1 (a tie, a first); b and d: rank 2 in one list each.
    assertFused(fuse(SEMANTIC, LEXICAL, { method: 'rrf', k: 60 }), [
      ['a', 1 / 61 + 1 / 63, 0.9, 5],
      ['c', 1 / 63 + 1 / 61, 0.7, 12],
      ['b', 1 / 62, 0.8, null],
      ['d', 1 / 62, null, 10],
    ]);
  });

  it('lets a small k favour the top ranks', () => {
    const semantic = [{ key: 'x', score: 0.9 }, { key: 'y', score: 0.8 }, { key: 'z', score: 0.1 }];
    const lexical = [{ key: 'z', score: 3 }, { key: 'y', score: 2 }];
    // k = 1: z 1/4 + 1/2 = 0.75, y 1/3 + 1/3 = 0.667, x 1/2.
    assertFused(fuse(semantic, lexical, { method: 'rrf', k: 1 }), [
      ['z', 1 / 4 + 1 / 2, 0.1, 3],
      ['y', 1 / 3 + 1 / 3, 0.8, 2],
      ['x', 1 / 2, 0.9, null],
    ]);
    // k = 60 flattens the ranks: z (1/63 + 1/61) stays ahead of y (2/62) by under 1e-4.
    const far = fuse(semantic, lexical, { method: 'rrf', k: 60 });
    assert.deepEqual(far.map((f) => f.key), ['z', 'y', 'x']);
    assert.ok(far[0]!.score - far[1]!.score < 1e-4);
  });
});

describe('fuse, relative', () => {
  it('min-max normalises each list and weighs semantic by alpha, ties by key', () => {
    // semantic normalised: a 1, b 0.5, c 0; lexical: c 1, d 5/7, a 0.
    assertFused(fuse(SEMANTIC, LEXICAL, { method: 'relative', alpha: 0.5 }), [
      ['a', 0.5, 0.9, 5],
      ['c', 0.5, 0.7, 12],
      ['d', 0.5 * (5 / 7), null, 10],
      ['b', 0.25, 0.8, null],
    ]);
    assertFused(fuse(SEMANTIC, LEXICAL, { method: 'relative', alpha: 0.7 }), [
      ['a', 0.7, 0.9, 5],
      ['b', 0.35, 0.8, null],
      ['c', 0.3, 0.7, 12],
      ['d', 0.3 * (5 / 7), null, 10],
    ]);
  });

  it('gives 1 to every row of a list with one distinct score, and alpha 0 or 1 picks one list', () => {
    assertFused(fuse([{ key: 'a', score: 0.4 }, { key: 'b', score: 0.4 }], [{ key: 'b', score: 7 }], { method: 'relative', alpha: 0.25 }), [
      ['b', 1, 0.4, 7],
      ['a', 0.25, 0.4, null],
    ]);
    assert.deepEqual(fuse(SEMANTIC, LEXICAL, { method: 'relative', alpha: 1 }).slice(0, 3).map((f) => f.key), ['a', 'b', 'c']);
    assert.deepEqual(fuse(SEMANTIC, LEXICAL, { method: 'relative', alpha: 0 }).slice(0, 3).map((f) => f.key), ['c', 'd', 'a']);
  });

  it('reads which end is best from the order: distances (lower is nearer) normalise the right way round', () => {
    const distances = [{ key: 'near', score: 0.2 }, { key: 'mid', score: 0.6 }, { key: 'far', score: 1.2 }];
    assertFused(fuse(distances, [], { method: 'relative', alpha: 0.5 }), [
      ['near', 0.5, 0.2, null],
      ['mid', 0.5 * 0.6, 0.6, null],
      ['far', 0, 1.2, null],
    ]);
  });
});

describe('fuse, edges', () => {
  it('returns one list alone when the other is empty, and nothing for two empty lists', () => {
    assert.deepEqual(fuse([], LEXICAL, { method: 'rrf', k: 60 }).map((f) => [f.key, f.semantic]), [['c', null], ['d', null], ['a', null]]);
    assert.deepEqual(fuse([], [], { method: 'relative', alpha: 0.5 }), []);
  });

  it('counts a key listed twice in one list at its first place only', () => {
    const fused = fuse([{ key: 'a', score: 0.9 }, { key: 'a', score: 0.1 }], [], { method: 'rrf', k: 10 });
    assertFused(fused, [['a', 1 / 11, 0.9, null]]);
  });
});
