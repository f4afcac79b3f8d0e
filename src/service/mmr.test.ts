import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mmr } from './mmr.ts';

const v = (...xs: number[]) => Float32Array.from(xs);

// Five near-copies of one row, ahead of two rows about something else.
const ITEMS = [
  { relevance: 0.95, vector: v(1, 0, 0) },
  { relevance: 0.94, vector: v(1, 0.01, 0) },
  { relevance: 0.93, vector: v(1, 0.02, 0.01) },
  { relevance: 0.92, vector: v(1, 0, 0.02) },
  { relevance: 0.91, vector: v(0.99, 0.01, 0.01) },
  { relevance: 0.8, vector: v(0, 1, 0) },
  { relevance: 0.7, vector: v(0, 0, 1) },
];

describe('mmr', () => {
  it('with diversity 0 keeps the relevance order (not the input order)', () => {
    const items = [ITEMS[5]!, ITEMS[0]!, ITEMS[6]!, ITEMS[1]!];
    assert.deepEqual(mmr(items, { diversity: 0, limit: 4 }), [1, 3, 0, 2]);
  });

  it('drops near-duplicates for rows about something else', () => {
    // Normalised relevance: copies 1, 0.96, 0.92, …; the other two 0.4 and 0. After the first
    // copy, a second scores 0.5·0.96 − 0.5·~1 < 0 while row 5 scores 0.5·0.4 − 0 and row 6 0.
    assert.deepEqual(mmr(ITEMS, { diversity: 0.5, limit: 4 }), [0, 5, 6, 1]);
    assert.deepEqual(mmr(ITEMS, { diversity: 0, limit: 3 }), [0, 1, 2]);
  });

  it('weighs relevance on any scale alike (BM25-like scores pick as cosines do)', () => {
    const bm25 = ITEMS.map((it) => ({ ...it, relevance: it.relevance * 40 - 20 }));
    for (const diversity of [0, 0.3, 0.5, 0.9]) {
      assert.deepEqual(mmr(bm25, { diversity, limit: 7 }), mmr(ITEMS, { diversity, limit: 7 }), `diversity ${diversity}`);
    }
  });

  it('with diversity 1 starts from the most relevant, then takes the least similar', () => {
    const items = [
      { relevance: 0.5, vector: v(1, 0) },
      { relevance: 0.9, vector: v(1, 0.1) },
      { relevance: 0.6, vector: v(-1, 0.05) },
      { relevance: 0.7, vector: v(0, 1) },
    ];
    // After item 1, item 2 is the least similar (cosine < 0), then item 3 (nearly orthogonal to both).
    assert.deepEqual(mmr(items, { diversity: 1, limit: 4 }), [1, 2, 3, 0]);
  });

  it('returns every item once when the limit is larger, nothing for limit 0 or no items', () => {
    assert.deepEqual([...mmr(ITEMS, { diversity: 0.7, limit: 50 })].sort(), [0, 1, 2, 3, 4, 5, 6]);
    assert.deepEqual(mmr(ITEMS, { diversity: 0.5, limit: 0 }), []);
    assert.deepEqual(mmr([], { diversity: 0.5, limit: 5 }), []);
  });

  it('treats a zero vector as like nothing else, and equal relevances as equal', () => {
    const items = [
      { relevance: 1, vector: v(1, 0) },
      { relevance: 1, vector: v(1, 0) },
      { relevance: 1, vector: v(0, 0) },
    ];
    assert.deepEqual(mmr(items, { diversity: 0.5, limit: 3 }), [0, 2, 1]);
  });
});
