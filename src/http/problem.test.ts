import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundedProblem, MAX_PROBLEM_BYTES, type Problem } from './problem.ts';

const base = (extra: Partial<Problem>): Problem => ({
  type: 'https://vss.dev/problems/validation_failed',
  title: 'The request is not valid',
  status: 400,
  detail: 'd',
  instance: '/v1/x',
  code: 'validation_failed',
  request_id: 'r',
  ...extra,
});

describe('boundedProblem', () => {
  it('leaves a small problem as it is', () => {
    const p = base({ errors: [{ path: '/body/a', message: 'm' }] });
    assert.deepEqual(JSON.parse(boundedProblem(p)), p);
  });

  it('drops field errors from the end and says so when they pass 64 KiB', () => {
    const errors = Array.from({ length: 100 }, (_, i) => ({ path: `/body/${i}${'p'.repeat(500)}`, message: 'm'.repeat(500) }));
    const json = boundedProblem(base({ errors }));
    assert.ok(Buffer.byteLength(json) <= MAX_PROBLEM_BYTES);
    const p = JSON.parse(json);
    assert.equal(p.errors_truncated, true);
    assert.ok(p.errors.length > 10 && p.errors.length < 100);
    assert.deepEqual(p.errors[0], errors[0]);
  });

  it('shortens a huge detail and drops a huge extra member, keeping the code and request id', () => {
    const json = boundedProblem(base({ detail: 'x'.repeat(1e6), valid: Array.from({ length: 1e5 }, (_, i) => `name${i}`) }));
    assert.ok(Buffer.byteLength(json) <= MAX_PROBLEM_BYTES);
    const p = JSON.parse(json);
    assert.equal(p.code, 'validation_failed');
    assert.equal(p.request_id, 'r');
    assert.ok(p.detail.length <= 2048);
    assert.equal(p.valid, undefined);
  });
});
