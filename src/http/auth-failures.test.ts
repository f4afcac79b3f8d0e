import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AUTH_FAILURE_LIMITS, AuthFailures } from './auth-failures.ts';

describe('AuthFailures', () => {
  it('answers an address 401 up to its limit, then 429 until its window is over', () => {
    let now = 1_000_000;
    const f = new AuthFailures({ perAddress: 3, global: 1000 }, () => now);
    for (let i = 0; i < 3; i++) assert.equal(f.fail('a'), 0);
    assert.equal(f.fail('a'), 60);
    assert.equal(f.fail('b'), 0, 'other addresses are not affected');
    now += 59_001;
    assert.equal(f.fail('a'), 1);
    now += 999;
    assert.equal(f.fail('a'), 0, 'a new window starts');
    assert.equal(f.fail('a'), 0);
    assert.equal(f.fail('a'), 0);
    assert.equal(f.fail('a'), 60);
  });

  it('answers every address 429 once all of them together reach the global budget', () => {
    let now = 0;
    const f = new AuthFailures({ perAddress: 3, global: 5 }, () => now);
    for (const a of ['a', 'b', 'c', 'd', 'e']) assert.equal(f.fail(a), 0, a);
    now = 20_000;
    assert.equal(f.fail('f'), 40, 'a fresh address is slowed too');
    assert.equal(f.fail('a'), 40);
    now = 60_000;
    assert.equal(f.fail('f'), 0, 'the next window has a fresh budget');
  });

  it('does not count the failures it refuses', () => {
    let now = 0;
    const f = new AuthFailures({ perAddress: 2, global: 3 }, () => now);
    f.fail('a');
    f.fail('a');
    for (let i = 0; i < 10; i++) assert.ok(f.fail('a') > 0);
    assert.equal(f.fail('b'), 0, 'the refused ones did not use up the global budget');
    assert.ok(f.fail('c') > 0, 'the budget of 3 is spent by the three answered 401');
  });

  it('keeps at most its bound of addresses, dropping windows that are over first, then the oldest', () => {
    let now = 0;
    const f = new AuthFailures({ perAddress: 1, global: Number.MAX_SAFE_INTEGER }, () => now);
    f.fail('old');
    now = AUTH_FAILURE_LIMITS.windowMs / 2;
    for (let i = 1; i < AUTH_FAILURE_LIMITS.maxAddresses; i++) f.fail(`x${i}`);
    assert.equal(f.size, AUTH_FAILURE_LIMITS.maxAddresses);
    f.fail('new'); // full, nothing over: the oldest ('old') goes
    assert.equal(f.size, AUTH_FAILURE_LIMITS.maxAddresses);
    assert.equal(f.fail('old'), 0, 'evicted: it starts afresh');
    assert.ok(f.fail('new') > 0 && f.fail('x2') > 0);
    now = AUTH_FAILURE_LIMITS.windowMs * 2;
    f.fail('later'); // every window is over: all go
    assert.equal(f.size, 1);
  });
});
