import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UploadSlots } from './upload-slots.ts';

describe('upload slots', () => {
  it('lets each user run at most perUser uploads at once, and gives a slot back once', () => {
    const slots = new UploadSlots(2);
    const a1 = slots.claim('a');
    const a2 = slots.claim('a');
    assert.throws(() => slots.claim('a'), (e: { code?: string; headers?: Record<string, string> }) => e.code === 'rate_limited' && e.headers?.['retry-after'] === '5');
    const b1 = slots.claim('b'); // another user is not held up
    a1();
    a1(); // a second call gives nothing back twice
    const a3 = slots.claim('a');
    assert.throws(() => slots.claim('a'), (e: { code?: string }) => e.code === 'rate_limited');
    for (const release of [a2, a3, b1]) release();
    for (const user of ['a', 'a', 'b', 'b']) slots.claim(user); // every slot is free again
  });
});
