import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SegmentedMatrix } from './matrix.ts';

const vec = (d: number, x: number): Float32Array => Float32Array.from({ length: d }, (_, i) => x + i / 10);

describe('SegmentedMatrix', () => {
  it('inserts, overwrites in place, reads back', () => {
    const m = new SegmentedMatrix(3, 4);
    m.set(10, vec(3, 1));
    m.set(20, vec(3, 2));
    m.set(10, vec(3, 5));
    assert.equal(m.size, 2);
    assert.deepEqual(Array.from(m.get(10)!), Array.from(vec(3, 5)));
    assert.deepEqual(Array.from(m.get(20)!), Array.from(vec(3, 2)));
    assert.equal(m.get(30), undefined);
    assert.throws(() => m.set(1, [1, 2]), RangeError);
  });

  it('stays dense under deletes and matches a model through random operations', () => {
    const d = 2;
    const m = new SegmentedMatrix(d, 5);
    const model = new Map<number, number>();
    let seed = 1;
    const rnd = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    for (let step = 0; step < 5000; step++) {
      const id = Math.floor(rnd() * 60);
      if (rnd() < 0.6) {
        const x = Math.floor(rnd() * 1000);
        m.set(id, vec(d, x));
        model.set(id, x);
      } else {
        assert.equal(m.delete(id), model.delete(id));
      }
      if (step % 97 === 0) {
        assert.equal(m.size, model.size);
        const seen: number[] = [];
        for (const b of m.segments()) {
          assert.equal(b.vectors.byteOffset, 0);
          assert.equal(b.vectors.length, b.rowIds.length * d);
          assert.ok(b.rowIds.length <= 5);
          b.rowIds.forEach((rid, i) => {
            seen.push(rid);
            assert.deepEqual(Array.from(b.vectors.subarray(i * d, i * d + d)), Array.from(vec(d, model.get(rid)!)));
          });
        }
        assert.deepEqual(seen.sort((a, b) => a - b), [...model.keys()].sort((a, b) => a - b));
      }
    }
  });

  it('gathers a subset into packed blocks', () => {
    const m = new SegmentedMatrix(2, 3);
    for (let i = 0; i < 10; i++) m.set(i, vec(2, i));
    const blocks = [...m.gather([9, 1, 42, 5, 3], 2)];
    assert.deepEqual(blocks.map((b) => Array.from(b.rowIds)), [[9, 1], [5, 3]]);
    for (const b of blocks) assert.equal(b.vectors.byteOffset, 0);
    assert.deepEqual(Array.from(blocks[1].vectors), [...vec(2, 5), ...vec(2, 3)]);
  });
});
