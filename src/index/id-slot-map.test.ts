import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IdSlotMap } from './id-slot-map.ts';

function rng(seed: number): () => number {
  return () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
}

describe('IdSlotMap', () => {
  it('agrees with a Map through random inserts, overwrites and deletes, while it grows', () => {
    const r = rng(11);
    const m = new IdSlotMap();
    const ref = new Map<number, number>();
    // Small ids collide and form long probe runs; big ones use the high 32 bits.
    const pick = (): number => (r() < 0.5 ? Math.floor(r() * 3000) : Math.floor(r() * 2 ** 53));
    const known: number[] = [];
    for (let step = 0; step < 60_000; step++) {
      const op = r();
      if (op < 0.55) {
        const id = pick();
        const slot = Math.floor(r() * 2 ** 31);
        m.set(id, slot);
        ref.set(id, slot);
        known.push(id);
      } else if (op < 0.85 && known.length > 0) {
        const id = known[Math.floor(r() * known.length)];
        assert.equal(m.delete(id), ref.delete(id));
      } else {
        const id = r() < 0.5 && known.length > 0 ? known[Math.floor(r() * known.length)] : pick();
        assert.equal(m.get(id), ref.get(id));
        assert.equal(m.has(id), ref.has(id));
      }
      assert.equal(m.size, ref.size);
    }
    for (const id of known) assert.equal(m.get(id), ref.get(id), `id ${id}`);
    assert.ok(ref.size > 1000, 'the run left many entries');
  });

  it('finds every entry after deleting from the middle of long probe runs', () => {
    // Consecutive ids, a table presized small: many entries share probe runs across growths.
    const m = new IdSlotMap(4);
    for (let id = 0; id < 5000; id++) m.set(id, id * 2);
    for (let id = 0; id < 5000; id += 3) assert.equal(m.delete(id), true);
    assert.equal(m.delete(3), false, 'already gone');
    for (let id = 0; id < 5000; id++) assert.equal(m.get(id), id % 3 === 0 ? undefined : id * 2);
    assert.equal(m.size, 5000 - Math.ceil(5000 / 3));
  });
});
