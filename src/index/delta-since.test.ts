import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DeltaSince } from './delta-since.ts';

const d = 8;
/** Row `i`'s vector: a unit vector along axis i % d, signed by i's parity above d. */
const vec = (i: number) => Float32Array.from({ length: d }, (_, j) => (j === i % d ? (Math.floor(i / d) % 2 === 0 ? 1 : -1) : 0));
const pack = (ids: number[]) => {
  const out = new Float32Array(ids.length * d);
  ids.forEach((id, i) => out.set(vec(id), i * d));
  return out;
};

describe('DeltaSince', () => {
  it('counts the rows a snapshot lacks as rows to scan, and its rows written or removed since as stale', () => {
    const inSnapshot = new Set([1, 2, 3]);
    const since = new DeltaSince(d);
    assert.equal(since.changes, 0);
    assert.deepEqual(since.search(vec(1), 5), { keys: [], distances: [] }, 'nothing to scan: no buffer yet');
    since.added([4, 2], pack([4, 2]), (id) => inSnapshot.has(id));
    assert.deepEqual([...since.stale], [2], 'row 2 has a new vector: its copy in the snapshot is stale');
    assert.equal(since.changes, 3);
    since.removed([3, 4]);
    assert.deepEqual([...since.stale].sort(), [2, 3], 'row 3 was in the snapshot; row 4 was only written since');
    assert.equal(since.changes, 3, 'row 2 to scan; rows 2 and 3 to skip');
    // Written again after its removal: already stale, now scanned too.
    since.added([3], pack([3]), () => false);
    assert.equal(since.changes, 4);
  });

  it('scans the rows written since, nearest first, with cosine distances', () => {
    const since = new DeltaSince(d);
    since.added([10, 11, 12], pack([0, 1, 8]), () => false);
    const got = since.search(vec(0), 3);
    assert.equal(got.keys[0], 10, 'the same direction first');
    assert.equal(got.keys[2], 12, 'the opposite direction last');
    assert.ok(Math.abs(got.distances[0]) < 1e-6 && Math.abs(got.distances[1] - 1) < 1e-6 && Math.abs(got.distances[2] - 2) < 1e-6, `${got.distances}`);
  });
});
