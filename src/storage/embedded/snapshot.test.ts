import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { openEmbeddedStorage } from './embedded-storage.ts';
import { tempDirForSuite } from '../../platform/temp-dir-test-support.ts';

const index = { saveEveryChanges: 1_000_000, saveEveryMs: 3_600_000, exactBelowRows: 10_000 };

describe('embedded snapshot', () => {
  const dir = tempDirForSuite('vss-snapshot-');

  it('lets a snapshot under way finish before the store closes, and the copy opens as a store with its rows', async () => {
    const data = path.join(dir(), 'data');
    const s = await openEmbeddedStorage({ dataDir: data, index });
    await s.createKeyspace({ name: 'ks', owner: null });
    await s.createTable({ keyspace: 'ks', name: 't', dimension: 64, metric: 'cosine', model: null });
    // Several megabytes: the backup takes many steps, and close() comes while it is under way.
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ key: `k${i}`, vector: Float32Array.from({ length: 64 }, (_, j) => Math.sin(i + j) + 1.5), metadata: { i }, text: `row ${i}` }));
    for (let i = 0; i < rows.length; i += 5000) await s.upsertVectors('ks', 't', rows.slice(i, i + 5000));
    const copy = path.join(dir(), 'copy');
    await fs.mkdir(copy);
    const fractions: number[] = [];
    // close() is asked from the backup's first progress report: surely while it is under way.
    let closing: Promise<void> | null = null;
    const taking = s.snapshot!(copy, (f) => {
      fractions.push(f);
      closing ??= s.close();
    });
    const image = await taking;
    assert.ok(closing !== null && fractions[0] < 0.5, `close() was asked at ${fractions[0]}, during the backup`);
    await closing;
    assert.deepEqual(image.tables, [{ keyspace: 'ks', table: 't', rows: 20_000 }]);
    assert.deepEqual(image.members, ['vss.db']);
    assert.ok(fractions.length > 0 && fractions.every((f, i) => f >= 0 && f <= 1 && (i === 0 || f >= fractions[i - 1])), `progress ${fractions}`);
    assert.equal((await fs.stat(path.join(copy, 'vss.db'))).mode & 0o777, 0o600);
    assert.deepEqual((await fs.readdir(copy)).sort(), ['vss.db'], 'one file: no -wal or -shm beside it');
    const reopened = await openEmbeddedStorage({ dataDir: copy, index });
    try {
      assert.equal(await reopened.countVectors('ks', 't'), 20_000);
      assert.deepEqual(await reopened.getVector('ks', 't', 'k1234'), rows[1234]);
    } finally {
      await reopened.close();
    }
  });
});
