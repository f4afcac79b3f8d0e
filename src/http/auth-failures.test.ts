import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AUTH_FAILURE_LIMITS, AuthFailures } from './auth-failures.ts';

describe('AuthFailures', () => {
  it('turns an address away once it reaches the limit, until its window is over', () => {
    let now = 1_000_000;
    const f = new AuthFailures(3, () => now);
    for (let i = 0; i < 3; i++) {
      assert.equal(f.retryAfter('a'), 0);
      f.record('a');
    }
    assert.equal(f.retryAfter('a'), 60);
    assert.equal(f.retryAfter('b'), 0, 'other addresses are not affected');
    now += 59_001;
    assert.equal(f.retryAfter('a'), 1);
    now += 999;
    assert.equal(f.retryAfter('a'), 0);
    f.record('a');
    assert.equal(f.retryAfter('a'), 0, 'a new window starts from one failure');
  });

  it('keeps at most its bound of addresses, dropping windows that are over first, then the oldest', () => {
    let now = 0;
    const f = new AuthFailures(1, () => now);
    f.record('old');
    now = AUTH_FAILURE_LIMITS.windowMs / 2;
    for (let i = 1; i < AUTH_FAILURE_LIMITS.maxAddresses; i++) f.record(`x${i}`);
    assert.equal(f.size, AUTH_FAILURE_LIMITS.maxAddresses);
    assert.ok(f.retryAfter('old') > 0 && f.retryAfter('x1') > 0);
    f.record('new'); // full, nothing over: the oldest ('old') goes
    assert.equal(f.size, AUTH_FAILURE_LIMITS.maxAddresses);
    assert.equal(f.retryAfter('old'), 0);
    assert.ok(f.retryAfter('new') > 0 && f.retryAfter('x1') > 0);
    now = AUTH_FAILURE_LIMITS.windowMs * 2;
    f.record('later'); // every window is over: all go
    assert.equal(f.size, 1);
  });
});
