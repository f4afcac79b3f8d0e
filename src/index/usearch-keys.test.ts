import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { keysAsNumbers } from './usearch-keys.ts';

describe('usearch keys as numbers', () => {
  it('reads every u64 below 2^53 as the same number, both halves', () => {
    const want = [0, 1, 7, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 5, 3 * 2 ** 40 + 12345, Number.MAX_SAFE_INTEGER];
    assert.deepEqual(Array.from(keysAsNumbers(BigUint64Array.from(want, BigInt))), want);
    // A view into a larger buffer (as usearch's results may be) reads only its own keys.
    const all = BigUint64Array.from([9n, 2n ** 33n + 1n, 4n, 8n]);
    assert.deepEqual(Array.from(keysAsNumbers(all.subarray(1, 3))), [2 ** 33 + 1, 4]);
    assert.equal(keysAsNumbers(new BigUint64Array(0)).length, 0);
  });
});
