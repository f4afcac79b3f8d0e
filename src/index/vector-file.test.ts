import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { FileMatrix, MemoryBudget, SCAN_ROWS, idsPath, sidecarPathOf } from './vector-file.ts';
import { tempDirForSuite } from '../platform/temp-dir-test-support.ts';

const vec = (d: number, x: number): Float32Array => Float32Array.from({ length: d }, (_, i) => x + i / 10);

/** Every live row as [rowId, first component], sorted, read through segments(). */
function contents(m: FileMatrix): [number, number][] {
  const out: [number, number][] = [];
  for (const b of m.segments()) {
    assert.equal(b.vectors.byteOffset, 0, 'usearch needs blocks at offset 0');
    assert.equal(b.vectors.length, b.rowIds.length * m.dimension);
    b.rowIds.forEach((id, i) => out.push([id, b.vectors[i * m.dimension]]));
  }
  return out.sort((a, b) => a[0] - b[0]);
}

describe('FileMatrix', () => {
  const dir = tempDirForSuite('vss-vecfile-');

  it('reserve() writes the space for new rows at once, and the rows then fill it', async () => {
    const d = 4;
    const file = path.join(dir(), 'reserve.f32');
    const m = FileMatrix.create(file, d);
    m.setMany([1, 2], [vec(d, 1), vec(d, 2)]);
    m.reserve(3);
    assert.equal((await fs.stat(file)).size, 5 * d * 4);
    m.reserve(2); // within the space already there: nothing written
    assert.equal((await fs.stat(file)).size, 5 * d * 4);
    m.setMany([3, 4, 5], [vec(d, 3), vec(d, 4), vec(d, 5)]);
    assert.equal((await fs.stat(file)).size, 5 * d * 4);
    assert.deepEqual(contents(m), [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]]);
    m.close();
  });

  it('puts every new row of a call in its own slot when a new row comes twice', () => {
    for (const bytes of [0, 1e9]) {
      const d = 2;
      const m = FileMatrix.create(path.join(dir(), `dup-${bytes}.f32`), d, new MemoryBudget(bytes));
      m.set(1, vec(d, 10));
      // Row 2 twice, then rows 3 and 4 after it, and an existing row among them.
      m.setMany([2, 3, 2, 4, 1, 5], [vec(d, 20), vec(d, 30), vec(d, 21), vec(d, 40), vec(d, 11), vec(d, 50)]);
      assert.equal(m.size, 5);
      assert.deepEqual(contents(m), [[1, 11], [2, 21], [3, 30], [4, 40], [5, 50]]);
      for (const [id, x] of [[3, 30], [4, 40], [5, 50]]) assert.deepEqual([...m.get(id)!], [...vec(d, x)]);
      m.close();
    }
  });

  // No memory copy; a copy throughout; a copy dropped half-way when the budget runs out.
  for (const [name, bytes] of [['from the file', 0], ['from memory', 1e9], ['from memory, then the file', 3 * 4 * 150]] as const) {
  it(`matches an in-memory model through random writes, deletes and a save and reopen (${name})`, async () => {
    const d = 3;
    const file = path.join(dir(), `model-${bytes}.f32`);
    const budget = new MemoryBudget(bytes);
    let m = FileMatrix.create(file, d, budget);
    assert.equal(m.inMemory, bytes > 0);
    const model = new Map<number, number>();
    let seed = 7;
    const rnd = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    for (let step = 0; step < 4000; step++) {
      const id = Math.floor(rnd() * 300);
      if (rnd() < 0.65) {
        const x = Math.floor(rnd() * 1000);
        if (rnd() < 0.5) m.set(id, vec(d, x));
        else m.setMany([id, id], [vec(d, x - 1), vec(d, x)]); // the later copy wins
        model.set(id, x);
      } else {
        assert.equal(m.delete(id), model.delete(id));
      }
      if (step % 500 === 499) {
        assert.equal(m.size, model.size);
        assert.deepEqual(contents(m), [...model].sort((a, b) => a[0] - b[0]));
        await m.save(step, 'db');
        m.close();
        const again = FileMatrix.openSaved(file, d, { seq: step, tag: 'db' }, budget);
        assert.ok(again, 'a saved matrix opens');
        m = again;
        assert.deepEqual(contents(m), [...model].sort((a, b) => a[0] - b[0]));
      }
    }
    for (const [id, x] of model) {
      assert.deepEqual(Array.from(m.get(id)!), Array.from(vec(d, x)));
      // The view re-scoring reads (vectors.ts): the same values while the copy is held, else null.
      const view = m.residentView(id);
      if (m.inMemory) assert.deepEqual(Array.from(view!), Array.from(vec(d, x)));
      else assert.equal(view, null);
    }
    assert.equal(m.get(100_000), undefined);
    assert.equal(m.residentView(100_000), m.inMemory ? undefined : null);
    assert.throws(() => m.set(1, [1, 2]), RangeError);
    if (bytes === 1e9) assert.ok(m.inMemory);
    if (bytes === 3 * 4 * 150) assert.ok(!m.inMemory, 'the copy was dropped');
    m.close();
  });
  }

  it('scans past one read block and gathers few or many rows in slot order', () => {
    const d = 2;
    const n = SCAN_ROWS * 2 + 123;
    const m = FileMatrix.create(path.join(dir(), 'big.f32'), d);
    const ids = Array.from({ length: n }, (_, i) => i * 3 + 1);
    m.setMany(ids, ids.map((id) => vec(d, id)));
    const blocks = [...m.segments()].map((b) => b.rowIds.length);
    assert.deepEqual(blocks, [SCAN_ROWS, SCAN_ROWS, 123]);
    assert.deepEqual(Array.from({ length: n }, (_, i) => m.rowIdAt(i)), ids);
    assert.equal(m.rowIdAt(n), undefined);

    const few = [ids[5000], 2, ids[3], ids[4], ids[n - 1]]; // 2 is not a row
    const got = [...m.gather(few, 2)];
    assert.deepEqual(got.map((b) => Array.from(b.rowIds)), [[ids[3], ids[4]], [ids[5000], ids[n - 1]]]);
    for (const b of got) b.rowIds.forEach((id, i) => assert.equal(b.vectors[i * d], Math.fround(id)));

    const many = ids.filter((_, i) => i % 3 === 0);
    let seen = 0;
    for (const b of m.gather(many)) {
      b.rowIds.forEach((id, i) => {
        assert.equal(id, many[seen++]);
        assert.equal(b.vectors[i * d + 1], Math.fround(id + 0.1));
      });
    }
    assert.equal(seen, many.length);
    m.close();
  });

  it('is trusted only for the sequence and database it was saved with, and only whole', async () => {
    const file = path.join(dir(), 'trust.f32');
    const m = FileMatrix.create(file, 4);
    m.setMany([1, 2, 3], [vec(4, 1), vec(4, 2), vec(4, 3)]);
    await m.save(9, 'db-a');
    m.close();
    const open = (seq: number, tag = 'db-a') => {
      const x = FileMatrix.openSaved(file, 4, { seq, tag });
      x?.close();
      return x !== null;
    };
    assert.equal(open(9), true);
    assert.equal(open(10), false, 'a later change was not saved into it');
    assert.equal(open(9, 'db-b'), false, 'another database');
    assert.equal(FileMatrix.openSaved(file, 5, { seq: 9, tag: 'db-a' }), null, 'another dimension');

    const ids = await fs.readFile(idsPath(file));
    await fs.writeFile(idsPath(file), ids.subarray(8));
    assert.equal(open(9), false, 'short ids file');
    const dup = Buffer.from(ids);
    dup.copy(dup, 8, 0, 8);
    await fs.writeFile(idsPath(file), dup);
    assert.equal(open(9), false, 'duplicate row ids');
    await fs.writeFile(idsPath(file), ids);
    await fs.truncate(file, 4 * 4 * 2);
    assert.equal(open(9), false, 'truncated vectors');
    await fs.writeFile(sidecarPathOf(file), '{oops');
    assert.equal(open(9), false, 'bad sidecar');

    // create() discards whatever was there.
    const fresh = FileMatrix.create(file, 4);
    assert.equal(fresh.size, 0);
    fresh.close();
    assert.equal(open(9), false);
  });
});
