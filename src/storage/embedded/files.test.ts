import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { rejectsWithCode } from '../contract.case.ts';
import type { FileRecord, MetadataRecord, VectorRow } from '../api.ts';
import { openEmbeddedStorage, type EmbeddedStorage } from './embedded-storage.ts';

const D = 8;
const KS = 'fks';
const T = 'docs';

/** `n` chunk rows of version `v`: unit vectors on axis (i + v) mod D, tagged with v. */
function chunkRows(name: string, n: number, v: number, dim = D): VectorRow[] {
  return Array.from({ length: n }, (_, i) => {
    const vector = new Float32Array(dim);
    vector[(i + v) % dim] = 1;
    vector[(i + 1) % dim] += 0.1;
    return { key: `${name}#${i}`, vector, metadata: { source_file: name, source_type: 'txt', chunk_index: i, v }, text: `v${v} chunk ${i}` };
  });
}

function fileOf(name: string, content: Buffer, chunks: number, table = T): FileRecord {
  return { keyspace: KS, table, name, size: content.length, sha256: 'x'.repeat(64), type: 'txt', chunks, createdAt: new Date().toISOString() };
}

const recordOf = (name: string, details: string, table = T): MetadataRecord => ({
  keyspace: KS,
  table,
  source_file: name,
  raw_value: `/v1/files/${KS}/${table}/${name}`,
  source_type: 'txt',
  processing_details: details,
});

describe('embedded FileStore', () => {
  let dir: string;
  let s: EmbeddedStorage;
  const open = () => openEmbeddedStorage({ dataDir: dir, index: { saveEveryChanges: 1_000_000, saveEveryMs: 3_600_000, exactBelowRows: 0 } });
  const stored = async () => (await fs.readdir(path.join(dir, 'files'))).sort();
  const keysOf = async (table = T) => {
    const all = await s.search(KS, table, { vector: Float32Array.from({ length: D }, () => 1), metric: 'cosine', candidates: 10_000, limit: 10_000 });
    return all.map((m) => m.key).sort();
  };

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-files-'));
    s = await open();
    await s.createKeyspace({ name: KS, owner: null });
    await s.createTable({ keyspace: KS, name: T, dimension: D, metric: 'cosine', model: null });
  });
  after(async () => {
    await s.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('stores content, chunk rows, the metadata record and the files row together', async () => {
    const content = Buffer.from('first version');
    await s.replaceFile(fileOf('a.txt', content, 5), content, chunkRows('a.txt', 5, 1), recordOf('a.txt', 'v1'));
    assert.deepEqual((await s.getFile(KS, T, 'a.txt'))?.chunks, 5);
    assert.deepEqual(await s.readFileContent(KS, T, 'a.txt'), content);
    assert.deepEqual((await s.listFiles([KS])).map((f) => f.name), ['a.txt']);
    assert.deepEqual(await s.listFiles(['other']), []);
    assert.equal((await s.getMetadata(KS, T, ['a.txt'])).get('a.txt')?.processing_details, 'v1');
    assert.deepEqual(await keysOf(), ['a.txt#0', 'a.txt#1', 'a.txt#2', 'a.txt#3', 'a.txt#4']);
    assert.equal((await stored()).length, 1);
  });

  it('replaces every old chunk, the record and the content; the old content file goes', async () => {
    const content = Buffer.from('second, shorter');
    await s.replaceFile(fileOf('a.txt', content, 2), content, chunkRows('a.txt', 2, 2), recordOf('a.txt', 'v2'));
    assert.deepEqual(await keysOf(), ['a.txt#0', 'a.txt#1']);
    assert.equal((await s.getVector(KS, T, 'a.txt#1'))?.metadata.v, 2);
    assert.equal(await s.getVector(KS, T, 'a.txt#4'), null);
    assert.deepEqual(await s.readFileContent(KS, T, 'a.txt'), content);
    assert.equal((await s.getMetadata(KS, T, ['a.txt'])).get('a.txt')?.processing_details, 'v2');
    assert.equal((await stored()).length, 1);
  });

  it('leaves the old file whole when a replacement fails, and no stray content', async () => {
    const before = await s.readFileContent(KS, T, 'a.txt');
    const bad = Buffer.from('wrong dimension');
    await rejectsWithCode(s.replaceFile(fileOf('a.txt', bad, 1), bad, chunkRows('a.txt', 1, 3, D + 1), recordOf('a.txt', 'v3')), 'dimension_mismatch');
    await rejectsWithCode(s.replaceFile(fileOf('a.txt', bad, 1, 'nope'), bad, chunkRows('a.txt', 1, 3), recordOf('a.txt', 'v3', 'nope')), 'table_not_found');
    await rejectsWithCode(s.replaceFile(fileOf('a.txt', bad, 2), bad, chunkRows('a.txt', 1, 3), recordOf('a.txt', 'v3')), 'validation_failed');
    assert.deepEqual(await s.readFileContent(KS, T, 'a.txt'), before);
    assert.deepEqual(await keysOf(), ['a.txt#0', 'a.txt#1']);
    assert.equal((await s.getMetadata(KS, T, ['a.txt'])).get('a.txt')?.processing_details, 'v2');
    assert.equal((await stored()).length, 1);
  });

  it('never lets a search see old and new chunks mixed', async () => {
    const big = (v: number, n: number) => {
      const c = Buffer.alloc(2_000_000, v);
      return s.replaceFile(fileOf('mix.txt', c, n), c, chunkRows('mix.txt', n, v), recordOf('mix.txt', `v${v}`));
    };
    await big(1, 40);
    let stop = false;
    let searches = 0;
    const watcher = (async () => {
      while (!stop) {
        const got = await s.search(KS, T, { vector: Float32Array.from({ length: D }, () => 1), metric: 'cosine', candidates: 10_000, limit: 10_000, filter: { source_file: 'mix.txt' } });
        const versions = new Set(got.map((m) => m.metadata.v));
        assert.equal(versions.size, 1, `a search saw versions ${[...versions].join(',')}`);
        assert.equal(got.length, versions.has(1) || versions.has(3) ? 40 : 25);
        searches++;
        await new Promise((r) => setImmediate(r));
      }
    })();
    for (const [v, n] of [[2, 25], [3, 40], [2, 25]]) await big(v, n);
    stop = true;
    await watcher;
    assert.ok(searches > 0);
    assert.equal(await s.countVectors(KS, T, { source_file: 'mix.txt' }), 25);
  });

  it('deletes a file with its chunks and record; false when there is none', async () => {
    assert.equal(await s.deleteFile(KS, T, 'mix.txt'), true);
    assert.equal(await s.countVectors(KS, T, { source_file: 'mix.txt' }), 0);
    assert.equal(await s.getFile(KS, T, 'mix.txt'), null);
    assert.equal(await s.readFileContent(KS, T, 'mix.txt'), null);
    assert.equal((await s.getMetadata(KS, T, ['mix.txt'])).size, 0);
    assert.equal(await s.deleteFile(KS, T, 'mix.txt'), false);
    assert.equal(await s.deleteFile(KS, 'nope', 'mix.txt'), false);
    assert.deepEqual(await keysOf(), ['a.txt#0', 'a.txt#1']);
    assert.equal((await stored()).length, 1);
  });

  it('counts file bytes in usage, keeps everything over a reopen and sweeps unreferenced content', async () => {
    const owner = await s.createUser({ name: 'o', email: `o-${randomUUID()}@x` });
    await s.createKeyspace({ name: 'owned', owner: owner.id });
    await s.createTable({ keyspace: 'owned', name: T, dimension: D, metric: 'cosine', model: null });
    const c = Buffer.from('12345');
    await s.replaceFile({ ...fileOf('u.txt', c, 1), keyspace: 'owned' }, c, chunkRows('u.txt', 1, 1), { ...recordOf('u.txt', ''), keyspace: 'owned' });
    assert.deepEqual(await s.usageOf(owner.id), { vectors: 1, fileBytes: 5 });

    const orphan = path.join(dir, 'files', randomUUID());
    await fs.writeFile(orphan, 'left by a crash');
    await fs.writeFile(`${orphan}.tmp`, 'left by a crash');
    await s.close();
    s = await open();
    assert.equal((await stored()).length, 2);
    assert.deepEqual(await s.readFileContent(KS, T, 'a.txt'), Buffer.from('second, shorter'));
    assert.deepEqual(await keysOf(), ['a.txt#0', 'a.txt#1']);
    assert.deepEqual((await s.listFiles([KS, 'owned'])).map((f) => `${f.keyspace}/${f.name}`), ['fks/a.txt', 'owned/u.txt']);
  });
});
