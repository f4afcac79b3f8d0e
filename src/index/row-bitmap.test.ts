import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RowBitmap } from './row-bitmap.ts';

describe('RowBitmap', () => {
  it('adds, tests and deletes dense and huge ids, counting each once', () => {
    const b = new RowBitmap();
    for (const id of [0, 1, 5000, 2 ** 40]) assert.equal(b.add(id), true);
    assert.equal(b.add(5000), false);
    assert.equal(b.add(2 ** 40), false);
    assert.equal(b.size, 4);
    assert.equal(b.has(5000), true);
    assert.equal(b.has(4999), false);
    assert.equal(b.has(1_000_000), false);
    assert.equal(b.has(2 ** 40), true);
    assert.equal(b.delete(5000), true);
    assert.equal(b.delete(5000), false);
    assert.equal(b.delete(2 ** 40), true);
    assert.equal(b.delete(7), false);
    assert.equal(b.size, 2);
    assert.equal(b.has(5000), false);
    assert.equal(b.has(2 ** 40), false);
  });
});
