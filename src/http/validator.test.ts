import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cutForErrors } from './validator.ts';

describe('cutForErrors', () => {
  it('keeps a small value whole', () => {
    const value = { a: [1, 2, { b: 'x' }], c: { d: null } };
    const { value: copy, cut } = cutForErrors(value, 100);
    assert.deepEqual(copy, value);
    assert.equal(cut.size, 0);
  });

  it('cuts from the back within the budget, keeping indices and names, and says where', () => {
    const value = { first: Array.from({ length: 50 }, (_, i) => i), second: Array.from({ length: 50 }, (_, i) => [i, i]) };
    const { value: copy, cut } = cutForErrors(value, 60) as { value: { first: number[]; second: number[][] }; cut: Set<string> };
    assert.deepEqual(copy.first, value.first);
    // 2 members and 50 numbers leave 8: the second array keeps its first 8 pairs, each cut to one.
    assert.deepEqual(copy.second, Array.from({ length: 8 }, (_, i) => [i]));
    assert.deepEqual([...cut].sort(), ['/second', ...Array.from({ length: 8 }, (_, i) => `/second/${i}`)].sort());
  });

  it('keeps one element of every array it reaches, so that no minItems error is made up', () => {
    const { value: copy } = cutForErrors({ a: [1, 2, 3], b: [[1, 2], [3]] }, 1) as { value: { a?: number[]; b?: number[][] } };
    for (const v of Object.values(copy)) assert.ok(Array.isArray(v) && v.length >= 1);
  });

  it('stops at 64 levels without recursing further', () => {
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const { cut } = cutForErrors(deep, 1_000_000);
    assert.equal(cut.size, 1);
    assert.equal([...cut][0].split('/').length - 1, 64);
  });
});
