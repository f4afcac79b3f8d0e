import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertLinearOnWorstCases } from '../../platform/text-worst-cases.ts';
import { deltaPieces } from './chat.ts';

describe('deltaPieces', () => {
  it('splits an answer into words that concatenate back to it', () => {
    for (const text of ['  Two words.  ', 'one', '   ', 'a\n\nb\tc ']) {
      const pieces = deltaPieces(text);
      assert.equal(pieces.join(''), text);
    }
    assert.deepEqual(deltaPieces(' The cat  sat. '), [' The ', 'cat  ', 'sat. ']);
  });

  it('is linear in the answer, whatever the characters', () => {
    assertLinearOnWorstCases(deltaPieces);
  });
});
