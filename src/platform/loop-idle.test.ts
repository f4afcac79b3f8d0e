import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { LoopIdle } from './loop-idle.ts';

describe('LoopIdle', () => {
  it('tells a wait for work since the last look from none', async () => {
    const idle = new LoopIdle();
    idle.waitedSinceLast();
    // Busy without yielding to the loop: no wait.
    const until = performance.now() + 5;
    while (performance.now() < until);
    assert.equal(idle.waitedSinceLast(), false);
    // The loop sleeps in its poll until the timer is due; unless this thread was descheduled past
    // the timer's due time first (a loaded machine), so a few tries.
    let waited = false;
    for (let i = 0; i < 10 && !waited; i++) {
      await sleep(10);
      waited = idle.waitedSinceLast();
    }
    assert.equal(waited, true);
    assert.equal(idle.waitedSinceLast(), false, 'the wait counted once');
  });
});
