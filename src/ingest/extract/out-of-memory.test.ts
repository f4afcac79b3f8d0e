import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unreadable } from './types.ts';
import { allocationFailed } from './out-of-memory.ts';

describe('allocationFailed', () => {
  it('sees an allocation failure however deep a parser wrapped it', () => {
    const oom = new RangeError('Array buffer allocation failed');
    assert.equal(allocationFailed(oom), true);
    assert.equal(allocationFailed(unreadable('not a readable PDF: Array buffer allocation failed', oom)), true);
    assert.equal(allocationFailed(new Error('outer', { cause: unreadable('inner', new RangeError('Invalid string length')) })), true);
  });

  it('is false for files that are merely bad, and for an error whose own text only quotes one', () => {
    assert.equal(allocationFailed(unreadable('not a readable PDF: Invalid XRef stream', new Error('Invalid XRef stream'))), false);
    assert.equal(allocationFailed(unreadable('the file contains no text')), false);
    // A service error's message is the service's, not an allocation's: only what it wraps counts.
    assert.equal(allocationFailed(unreadable('the name says "allocation failed"')), false);
    assert.equal(allocationFailed('allocation failed'), false);
  });
});
