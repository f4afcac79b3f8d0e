import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { splitBatches } from './batches.ts';

describe('splitBatches', () => {
  it('keeps order and cuts at the item limit', () => {
    const items = Array.from({ length: 2500 }, (_, i) => i);
    const batches = splitBatches(items, { maxItems: 1000, maxBytes: 1 << 25 });
    assert.deepEqual(batches.map((b) => b.length), [1000, 1000, 500]);
    assert.deepEqual(batches.flat(), items);
  });

  it('cuts before the JSON passes the byte limit, counting UTF-8 bytes', () => {
    const item = { text: 'é'.repeat(1000) }; // 2,000 bytes of UTF-8 in 1,000 characters
    const batches = splitBatches(Array.from({ length: 10 }, () => item), { maxItems: 1000, maxBytes: 4096 + 6100 });
    assert.deepEqual(batches.map((b) => b.length), [3, 3, 3, 1]);
  });

  it('sends an item larger than the limit alone rather than dropping it', () => {
    const batches = splitBatches(['a', 'x'.repeat(10_000), 'b'], { maxItems: 1000, maxBytes: 4096 + 100 });
    assert.deepEqual(batches, [['a'], ['x'.repeat(10_000)], ['b']]);
  });
});
