import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fuse, keylessTies, sortFused, type Fused } from './fusion.ts';

const SEMANTIC = [
  { ref: 'a', key: 'a', score: 0.9 },
  { ref: 'b', key: 'b', score: 0.8 },
  { ref: 'c', key: 'c', score: 0.7 },
];
const LEXICAL = [
  { ref: 'c', key: 'c', score: 12 },
  { ref: 'd', key: 'd', score: 10 },
  { ref: 'a', key: 'a', score: 5 },
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
    const semantic = [{ ref: 'x', key: 'x', score: 0.9 }, { ref: 'y', key: 'y', score: 0.8 }, { ref: 'z', key: 'z', score: 0.1 }];
    const lexical = [{ ref: 'z', key: 'z', score: 3 }, { ref: 'y', key: 'y', score: 2 }];
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
    assertFused(fuse([{ ref: 'a', key: 'a', score: 0.4 }, { ref: 'b', key: 'b', score: 0.4 }], [{ ref: 'b', key: 'b', score: 7 }], { method: 'relative', alpha: 0.25 }), [
      ['b', 1, 0.4, 7],
      ['a', 0.25, 0.4, null],
    ]);
    assert.deepEqual(fuse(SEMANTIC, LEXICAL, { method: 'relative', alpha: 1 }).slice(0, 3).map((f) => f.key), ['a', 'b', 'c']);
    assert.deepEqual(fuse(SEMANTIC, LEXICAL, { method: 'relative', alpha: 0 }).slice(0, 3).map((f) => f.key), ['c', 'd', 'a']);
  });

  it('reads which end is best from the order: distances (lower is nearer) normalise the right way round', () => {
    const distances = [{ ref: 'near', key: 'near', score: 0.2 }, { ref: 'mid', key: 'mid', score: 0.6 }, { ref: 'far', key: 'far', score: 1.2 }];
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

  it('counts a row listed twice in one list at its first place only', () => {
    const fused = fuse([{ ref: 'a', key: 'a', score: 0.9 }, { ref: 'a', key: 'a', score: 0.1 }], [], { method: 'rrf', k: 10 });
    assertFused(fused, [['a', 1 / 11, 0.9, null]]);
  });
});

describe('fuse, rows listed without a key', () => {
  // Storage lists rows by ref; the semantic side here gives no keys (as the embedded backend's).
  const semantic = [{ ref: 1, score: 0.9 }, { ref: 2, score: 0.8 }, { ref: 3, score: 0.7 }];
  const lexical = [{ ref: 4, key: 'a', score: 12 }, { ref: 5, key: 'z', score: 10 }, { ref: 1, key: 'm', score: 5 }];

  it('merges the lists by ref, taking a key from either list', () => {
    const fused = fuse(semantic, lexical, { method: 'relative', alpha: 0.5 });
    // 1: 0.5 (semantic's best, lexical's worst) ties 4 (lexical's best): by key, 'a' before 'm'.
    assert.deepEqual(fused.map((f) => [f.ref, f.key, f.semantic, f.lexical]), [
      [4, 'a', null, 12],
      [1, 'm', 0.9, 5],
      [5, 'z', null, 10],
      [2, undefined, 0.8, null],
      [3, undefined, 0.7, null],
    ]);
  });

  it('names the keyless rows of tied runs that begin among the first upTo, and orders them by key once they have one', () => {
    // rrf, k 60: 1 is in both lists (1/61 + 1/63), 4 first of one (1/61); 2 and 5, second of one
    // each, tie (1/62); 3 is third of one (1/63).
    const fused = fuse(semantic, lexical, { method: 'rrf', k: 60 });
    assert.deepEqual(fused.map((f) => f.ref), [1, 4, 2, 5, 3]);
    assert.deepEqual(keylessTies(fused, 5).map((f) => f.ref), [2]);
    // The tied run begins at place 3: asked for the first 2 places only, nothing needs a key.
    assert.deepEqual(keylessTies(fused, 2), []);
    assert.deepEqual(keylessTies(fused, 3).map((f) => f.ref), [2]);
    // 2's key sorts after 5's ('z'): sortFused puts it second of the run.
    fused.find((f) => f.ref === 2)!.key = 'zz';
    assert.deepEqual(sortFused(fused).map((f) => f.ref), [1, 4, 5, 2, 3]);
    fused.find((f) => f.ref === 2)!.key = 'b';
    assert.deepEqual(sortFused(fused).map((f) => f.ref), [1, 4, 2, 5, 3]);
  });
});
