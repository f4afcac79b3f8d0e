import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServiceError } from '../errors.ts';
import { VectorBatchBody, VectorDeleteBody } from './schemas/index.ts';
import { boundedValidatorCompiler, cutForErrors } from './validator.ts';

/** The ServiceError the compiled validator refuses `data` with, or null when it passes. */
function refusal(schema: object, data: unknown): ServiceError | null {
  const validate = boundedValidatorCompiler()({ schema, httpPart: 'body', method: 'POST', url: '/' }) as (d: unknown) => true | { error: ServiceError };
  const out = validate(data);
  return out === true ? null : out.error;
}

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

describe('boundedValidatorCompiler', () => {
  const where = { keyspace: 'k', table: 't' };

  it('passes what the schema accepts', () => {
    assert.equal(refusal(VectorDeleteBody, { ...where, keys: ['a'] }), null);
  });

  it('names every bad field of a small body', () => {
    const e = refusal(VectorBatchBody, { ...where, vectors: [{ vector: ['a'] }, { vector: [1], extra: 1 }] });
    assert.deepEqual(e?.errors?.map((x) => x.path), ['/body/vectors/0/vector/0', '/body/vectors/1/extra']);
    assert.equal(e?.errorsTruncated, false);
  });

  it('names at most 100 fields of a huge one, the refusing error first, and says it stopped', () => {
    const e = refusal(VectorBatchBody, { ...where, vector: Array.from({ length: 2000 }, () => Array.from({ length: 50 }, () => 'x')) });
    assert.equal(e?.errors?.[0].path, '/body/vector');
    assert.equal(e?.errors?.length, 100);
    assert.equal(e?.errorsTruncated, true);
  });

  it('tells a body with both members of a one-of to give only one', () => {
    const e = refusal(VectorDeleteBody, { ...where, keys: ['a'], filter: { a: 1 } });
    assert.deepEqual(e?.errors, [{ path: '/body', message: 'give only one of keys, filter' }]);
  });
});
