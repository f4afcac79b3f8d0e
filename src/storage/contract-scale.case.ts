/**
 * Contract cases about tables past a backend's exact-search threshold and about counts: a selective
 * filter still fills its page, and row counts stay right under concurrent and repeated writes.
 * Called from storageContract (contract.case.ts) with its store.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Storage, VectorRow } from './api.ts';
import { mulberry32 } from './contract-random.case.ts';

/** Above Cassandra's ANN page (1,000 rows) and the embedded exact threshold its contract run uses. */
const ROWS = 2_000;
const D = 8;

const rowsOf = (keys: string[], seed: number, metadata: (i: number) => VectorRow['metadata']): VectorRow[] => {
  const r = mulberry32(seed);
  return keys.map((key, i) => ({ key, vector: Float32Array.from({ length: D }, () => r() * 2 - 1), metadata: metadata(i), text: null }));
};

export function scaleContract(store: () => Storage): void {
  describe('filters past the exact threshold, and counts', () => {
    it(`a 1% filter on ${ROWS.toLocaleString('en')} rows returns a full page, every match matching`, async () => {
      const s = store();
      await s.createKeyspace({ name: 'scale', owner: null });
      await s.createTable({ keyspace: 'scale', name: 'big', dimension: D, metric: 'cosine', model: null });
      const rows = rowsOf(Array.from({ length: ROWS }, (_, i) => `r${i}`), 11, (i) => ({ bucket: i % 100, tag: `t${Math.floor(i / 100) % 10}` }));
      for (let i = 0; i < rows.length; i += 500) await s.upsertVectors('scale', 'big', rows.slice(i, i + 500));
      const r = mulberry32(12);
      for (let qn = 0; qn < 5; qn++) {
        const q = Float32Array.from({ length: D }, () => r() * 2 - 1);
        const bucket = qn * 17;
        const got = await s.search('scale', 'big', { vector: q, metric: 'cosine', candidates: 100, limit: 10, filter: { bucket } });
        assert.equal(got.length, 10, `bucket ${bucket}: ${got.length} matches of the 20 stored`);
        assert.ok(got.every((g) => g.metadata.bucket === bucket));
        // A second condition: 2 of the bucket's 20 rows have each tag.
        const both = await s.search('scale', 'big', { vector: q, metric: 'cosine', candidates: 100, limit: 10, filter: { bucket, tag: `t${qn}` } });
        assert.equal(both.length, 2);
        assert.ok(both.every((g) => g.metadata.bucket === bucket && g.metadata.tag === `t${qn}`));
      }
      assert.equal(await s.countVectors('scale', 'big', { bucket: 3 }), 20);
    });

    it('counts stay right under concurrent writers, repeated writes and deletes of missing keys', async () => {
      const s = store();
      await s.createKeyspace({ name: 'counts', owner: null });
      await s.createTable({ keyspace: 'counts', name: 'c', dimension: D, metric: 'euclidean', model: null });
      const shared = rowsOf(Array.from({ length: 20 }, (_, i) => `s${i}`), 1, () => ({ v: 0 }));
      await s.upsertVectors('counts', 'c', shared);
      // Four writers at once: 40 new keys each, and all rewriting the 20 shared keys.
      const writers = [0, 1, 2, 3].map((w) => [...rowsOf(Array.from({ length: 40 }, (_, i) => `w${w}_${i}`), 10 + w, () => ({ w })), ...rowsOf(shared.map((x) => x.key), 20 + w, () => ({ v: w }))]);
      await Promise.all(writers.map((rows) => s.upsertVectors('counts', 'c', rows)));
      assert.equal(await s.countVectors('counts', 'c'), 180);
      // A call repeated (as a client retries after a timeout) adds nothing.
      await s.upsertVectors('counts', 'c', writers[2]);
      await s.upsertVectors('counts', 'c', writers[2]);
      assert.equal(await s.countVectors('counts', 'c'), 180);
      assert.equal(await s.deleteVectors('counts', 'c', ['w0_0', 'w0_1', 'missing']), 2);
      assert.equal(await s.deleteVectors('counts', 'c', ['w0_0', 'w0_1']), 0);
      assert.equal(await s.deleteByFilter('counts', 'c', { w: 1 }), 40);
      assert.equal(await s.deleteByFilter('counts', 'c', { w: 1 }), 0);
      assert.equal(await s.countVectors('counts', 'c'), 138);
      assert.equal(await s.countVectors('counts', 'c', { w: 3 }), 40);
      const listed = (await s.listTables('counts')).find((t) => t.name === 'c');
      assert.equal(listed?.rowCount, 138);
    });
  });
}
