import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LlmSlots } from './llm-slots.ts';

describe('LlmSlots', () => {
  it('gives at most max slots, and each back once however often it is released', () => {
    const slots = new LlmSlots(2);
    const a = slots.tryClaim();
    const b = slots.tryClaim();
    assert.ok(a && b);
    assert.equal(slots.tryClaim(), null);
    a();
    a();
    assert.equal(slots.inFlight, 1);
    const c = slots.tryClaim();
    assert.ok(c);
    assert.equal(slots.tryClaim(), null);
    b();
    c();
    assert.equal(slots.inFlight, 0);
  });
});
