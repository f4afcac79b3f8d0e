import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { storageContract } from '../contract.case.ts';
import { mulberry32 } from '../contract-random.case.ts';
import { ManualClock } from '../contract-ttl.case.ts';
import type { Metric, StoredMatch, VectorRow } from '../api.ts';
import { openEmbeddedStorage, type EmbeddedOptions, type EmbeddedStorage } from './embedded-storage.ts';
import { exactScore } from '../../index/metric.ts';

const tempDir = (): Promise<string> => fs.mkdtemp(path.join(os.tmpdir(), 'vss-embedded-'));
const indexOpts = (exactBelowRows: number, segmentRows = 250_000): EmbeddedOptions['index'] => ({ saveEveryChanges: 1_000_000, saveEveryMs: 3_600_000, exactBelowRows, segmentRows });

const contractClock = new ManualClock();
storageContract('embedded', async () => {
  const dir = await tempDir();
  const storage = await openEmbeddedStorage({ dataDir: dir, index: indexOpts(0), clock: contractClock.now });
  return {
    storage,
    cleanup: async () => {
      await storage.close();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}, contractClock);

function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 16807) % 2147483647) / 2147483647;
}

/** Vectors around `clusters` random centres, like embeddings of a few topics. */
function clustered(n: number, d: number, seed: number, clusters = 40): Float32Array[] {
  const r = rng(seed);
  const g = (): number => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
  const centres = Array.from({ length: clusters }, () => Float32Array.from({ length: d }, g));
  return Array.from({ length: n }, () => {
    const c = centres[Math.floor(r() * clusters)];
    return Float32Array.from(c, (x) => x + 0.7 * g());
  });
}

const rowsOf = (vectors: Float32Array[], prefix = 'k'): VectorRow[] =>
  vectors.map((vector, i) => ({ key: `${prefix}${i}`, vector, metadata: { i, bucket: i % 5 }, text: i % 3 === 0 ? `text ${i}` : null }));

async function ingest(s: EmbeddedStorage, ks: string, table: string, rows: VectorRow[], batch = 1000): Promise<void> {
  for (let i = 0; i < rows.length; i += batch) await s.upsertVectors(ks, table, rows.slice(i, i + batch));
}

const brief = (ms: StoredMatch[]): [string, number][] => ms.map((m) => [m.key, m.score]);

/**
 * ANN answers are approximate: each must be a correctly scored, best-first subset of the table
 * that agrees with the exact answer on most keys (scores of shared keys equal, none deleted).
 */
function assertGoodAnn(got: StoredMatch[][], exact: StoredMatch[][], limit: number): void {
  let shared = 0;
  got.forEach((g, i) => {
    const want = new Map(exact[i].slice(0, limit).map((m) => [m.key, m.score]));
    assert.equal(g.length, limit);
    g.forEach((m, j) => {
      if (j > 0) assert.ok(m.score <= g[j - 1].score, 'best first');
      const w = want.get(m.key);
      if (w !== undefined) {
        shared++;
        assert.ok(Math.abs(w - m.score) < 1e-9);
      } else {
        assert.ok(m.score <= exact[i][limit - 1].score + 1e-9, 'a key missing from the exact answer cannot score better');
      }
    });
  });
  assert.ok(shared / (got.length * limit) >= 0.9, `recall ${shared / (got.length * limit)}`);
}

function assertSameAnswers(got: StoredMatch[][], want: StoredMatch[][]): void {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => {
    assert.deepEqual(g.map((m) => m.key), want[i].map((m) => m.key), `query ${i}`);
    g.forEach((m, j) => assert.ok(Math.abs(m.score - want[i][j].score) < 1e-9));
  });
}

describe('embedded storage', () => {
  let dir: string;
  before(async () => {
    dir = await tempDir();
  });
  after(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('commits nothing when the vector file cannot grow (a full disk), and answers insufficient_storage', async () => {
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'full'), index: indexOpts(1_000_000) });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      await s.createTable({ keyspace: 'ks', name: 't', dimension: 4, metric: 'cosine', model: null });
      const rows = rowsOf(clustered(30, 4, 5));
      await s.upsertVectors('ks', 't', rows.slice(0, 10));
      // Node's fs is the vector file's only writer (SQLite writes natively), so this is its disk.
      const writeSync = fsSync.writeSync;
      fsSync.writeSync = (() => {
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });
      }) as typeof fsSync.writeSync;
      try {
        await assert.rejects(s.upsertVectors('ks', 't', rows.slice(10, 20)), { code: 'insufficient_storage' });
      } finally {
        fsSync.writeSync = writeSync;
      }
      assert.equal(await s.countVectors('ks', 't'), 10);
      assert.equal(await s.getVector('ks', 't', rows[10].key), null);
      // With space again, the same write lands whole and every row is found with its own vector.
      await s.upsertVectors('ks', 't', rows.slice(10, 30));
      assert.equal(await s.countVectors('ks', 't'), 30);
      for (const r of rows) {
        const [hit] = await s.search('ks', 't', { vector: r.vector, metric: 'cosine', candidates: 100, limit: 1, includeVector: true });
        assert.deepEqual([...hit.vector!], [...r.vector], r.key);
      }
    } finally {
      await s.close();
    }
  });

  it('removes at start the temp files of durable writes that a killed process left', async () => {
    const dataDir = path.join(dir, 'temps');
    const s1 = await openEmbeddedStorage({ dataDir, index: indexOpts(0) });
    await s1.createKeyspace({ name: 'ks', owner: null });
    await s1.createTable({ keyspace: 'ks', name: 't', dimension: 2, metric: 'cosine', model: null });
    await s1.upsertVectors('ks', 't', [{ key: 'a', vector: Float32Array.of(1, 2), metadata: {}, text: null }]);
    await s1.whenIndexed();
    await s1.close();
    const dead = 2 ** 22 + 17; // above Linux's pid_max default: no process has it
    const litter = ['indexes/1.json', 'vectors/1.f32.json', 'files/0b6c1e0e-5d7a-4a57-9d0e-d2b6f5d1a0c1'].map((f) => path.join(dataDir, `${f}.${dead}.0123abcd.tmp`));
    const kept = path.join(dataDir, 'vectors', 'notes.tmp');
    for (const f of [...litter, kept]) {
      await fs.mkdir(path.dirname(f), { recursive: true });
      await fs.writeFile(f, 'partial');
    }
    const s2 = await openEmbeddedStorage({ dataDir, index: indexOpts(0) });
    try {
      for (const f of litter) await assert.rejects(fs.stat(f), { code: 'ENOENT' }, f);
      await fs.stat(kept);
      assert.equal(await s2.countVectors('ks', 't'), 1);
    } finally {
      await s2.close();
    }
  });

  it('leaves no table behind when its vector file cannot be made (a read-only or full directory)', async () => {
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'limbo'), index: indexOpts(1_000_000) });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      const openSync = fsSync.openSync;
      fsSync.openSync = ((file: fsSync.PathLike, ...rest: unknown[]) => {
        if (String(file).endsWith('.f32')) throw Object.assign(new Error(`EROFS: read-only file system, open '${file}'`), { code: 'EROFS' });
        return (openSync as (...a: unknown[]) => number)(file, ...rest);
      }) as typeof fsSync.openSync;
      try {
        await assert.rejects(s.createTable({ keyspace: 'ks', name: 't', dimension: 2, metric: 'cosine', model: null }), { code: 'storage_unavailable' });
      } finally {
        fsSync.openSync = openSync;
      }
      assert.equal(await s.getTable('ks', 't'), null);
      // Once the directory takes files again, the same table is made and used.
      await s.createTable({ keyspace: 'ks', name: 't', dimension: 2, metric: 'cosine', model: null });
      await s.upsertVectors('ks', 't', [{ key: 'a', vector: Float32Array.of(1, 2), metadata: {}, text: null }]);
      assert.equal(await s.countVectors('ks', 't'), 1);
    } finally {
      await s.close();
    }
  });

  it('finds everything again after close and reopen', async () => {
    const dataDir = path.join(dir, 'reopen');
    const s1 = await openEmbeddedStorage({ dataDir, index: indexOpts(0) });
    await s1.createKeyspace({ name: 'ks', owner: 'u1' });
    await s1.createTable({ keyspace: 'ks', name: 't', dimension: 8, metric: 'euclidean', model: 'm' });
    const rows = rowsOf(clustered(500, 8, 3));
    await ingest(s1, 'ks', 't', rows, 128);
    await s1.deleteVectors('ks', 't', ['k0', 'k1']);
    const user = await s1.createUser({ name: 'A', email: 'a@example.com' });
    const key = await s1.createApiKey({ userId: user.id, name: 'k', hash: 'h'.repeat(64), permissions: 'Read', resources: ['ks'] });
    await s1.upsertMetadata([{ keyspace: 'ks', table: 't', source_file: 'f.txt', raw_value: 'r', source_type: 'txt', processing_details: '' }]);
    const q = { vector: rows[10].vector, metric: 'euclidean' as Metric, candidates: 1000, limit: 20 };
    const before = await s1.search('ks', 't', q);
    await s1.whenIndexed();
    await s1.close();
    await s1.close(); // idempotent
    assert.equal(await s1.ping(), false);

    const s2 = await openEmbeddedStorage({ dataDir, index: indexOpts(0) });
    try {
      assert.equal(s2.startup.rows, 498);
      assert.equal(s2.startup.refilled, 0, 'the vector file of a clean close is used as it is');
      assert.deepEqual((await s2.getKeyspace('ks'))?.owner, 'u1');
      assert.deepEqual((await s2.listTables('ks')).map((t) => [t.name, t.rowCount, t.model]), [['t', 498, 'm']]);
      assert.equal(await s2.getVector('ks', 't', 'k0'), null);
      assert.deepEqual(await s2.getVector('ks', 't', 'k3'), { ...rows[3], metadata: { i: 3, bucket: 3 } });
      assert.deepEqual(await s2.getUser(user.id), user);
      assert.deepEqual(await s2.findApiKeyByHash('h'.repeat(64)), key);
      assert.equal((await s2.getMetadata('ks', 't', ['f.txt'])).size, 1);
      assertSameAnswers([await s2.search('ks', 't', q)], [before]);
      // the saved index was opened (it has a saved seq), not rebuilt
      await s2.whenIndexed();
      assert.deepEqual(s2.indexStatus().map((x) => [x.rows, x.indexed, x.pending]), [[498, 498, 0]]);
      assert.ok(s2.indexStatus()[0].savedSeq > 0);
    } finally {
      await s2.close();
    }
  });

  for (const damage of ['garbage', 'truncated', 'deleted', 'stale'] as const) {
    it(`answers identically after its index is ${damage}`, async () => {
      const dataDir = path.join(dir, `damage-${damage}`);
      const indexDir = path.join(dataDir, 'indexes');
      const rows = rowsOf(clustered(8000, 16, 17));
      // 2,000-row segments: three sealed graphs and a delta by the end.
      const s1 = await openEmbeddedStorage({ dataDir, index: indexOpts(0, 2000) });
      await s1.createKeyspace({ name: 'ks', owner: null });
      await s1.createTable({ keyspace: 'ks', name: 't', dimension: 16, metric: 'cosine', model: null });
      await ingest(s1, 'ks', 't', rows.slice(0, 6000));
      await s1.whenIndexed();
      await s1.flushIndexes();
      const saved = new Map<string, Buffer>();
      for (const f of await fs.readdir(indexDir)) saved.set(f, await fs.readFile(path.join(indexDir, f)));
      // Changes after the saved index: new rows, an overwrite, deletes (the newest row id is reused by SQLite).
      await ingest(s1, 'ks', 't', rows.slice(6000));
      await s1.upsertVectors('ks', 't', [{ ...rows[5], vector: rows[6].vector }]);
      await s1.deleteVectors('ks', 't', ['k7', 'k8', `k${rows.length - 1}`]);
      await s1.upsertVectors('ks', 't', [{ key: 'late', vector: rows[9].vector, metadata: {}, text: null }]);
      await s1.whenIndexed();

      const queries = [rows[5].vector, rows[6].vector, rows[7].vector, rows[9].vector, rows[7000].vector, ...clustered(10, 16, 99)];
      const exactQ = queries.map((vector) => ({ vector, metric: 'cosine' as Metric, candidates: 10_000, limit: 10 }));
      const annQ = queries.map((vector) => ({ vector, metric: 'cosine' as Metric, candidates: 120, limit: 5 }));
      const exact1 = await Promise.all(exactQ.map((q) => s1.search('ks', 't', q)));
      const ann1 = await Promise.all(annQ.map((q) => s1.search('ks', 't', q)));
      assert.ok(s1.searchCounts().ann >= annQ.length, 'the ANN path was used');
      assert.ok(s1.indexStatus()[0].segments >= 3, 'sealed segments were made');
      assertGoodAnn(ann1, exact1, 5);
      await s1.close();

      const manifest = JSON.parse(await fs.readFile(path.join(indexDir, '1.json'), 'utf8')) as { segments: { file: string }[] };
      const graph = path.join(indexDir, manifest.segments[1].file);
      if (damage === 'garbage') {
        const junk = Buffer.alloc((await fs.stat(graph)).size);
        for (let i = 0; i < junk.length; i++) junk[i] = (i * 7919) & 0xff;
        await fs.writeFile(graph, junk);
      } else if (damage === 'truncated') {
        await fs.truncate(graph, Math.floor((await fs.stat(graph)).size / 3));
      } else if (damage === 'deleted') {
        await fs.rm(graph);
      } else {
        // an older, intact index: start-up must catch it up from the database
        for (const f of await fs.readdir(indexDir)) await fs.rm(path.join(indexDir, f));
        for (const [f, data] of saved) await fs.writeFile(path.join(indexDir, f), data);
      }

      const logged: string[] = [];
      const s2 = await openEmbeddedStorage({ dataDir, index: indexOpts(0, 2000), log: (msg) => logged.push(msg) });
      try {
        const status = s2.indexStatus()[0];
        assert.equal(status.rows, 7998);
        assert.ok(status.pending > 0, 'work remains at start-up');
        assert.equal(s2.startup.refilled, 0);
        // Correct at once, while the index is still behind: the pending rows are scanned exactly,
        // so even the queries that asked for fewer candidates than rows get the exact answer.
        assertSameAnswers(await Promise.all(exactQ.map((q) => s2.search('ks', 't', q))), exact1);
        assertSameAnswers(await Promise.all(annQ.map((q) => s2.search('ks', 't', q))), exact1.map((m) => m.slice(0, 5)));
        await s2.whenIndexed();
        assert.deepEqual(s2.indexStatus().map((x) => [x.rows, x.indexed, x.pending]), [[7998, 7998, 0]]);
        const annBefore = s2.searchCounts().ann;
        assertSameAnswers(await Promise.all(exactQ.map((q) => s2.search('ks', 't', q))), exact1);
        assertGoodAnn(await Promise.all(annQ.map((q) => s2.search('ks', 't', q))), exact1, 5);
        assert.equal(s2.searchCounts().ann, annBefore + annQ.length);
        const deleted = await s2.search('ks', 't', { vector: rows[7].vector, metric: 'cosine', candidates: 100, limit: 3 });
        assert.ok(!deleted.some((m) => m.key === 'k7'));
        // A damaged index is rebuilt and says so once; an older intact one is caught up quietly.
        assert.equal(logged.length, damage === 'stale' ? 0 : 1, logged.join('; '));
      } finally {
        await s2.close();
      }
    });
  }

  it('re-indexes after a restart the rows a mostly-deleted segment handed back before it (they were out of the searches\' reach)', async () => {
    const dataDir = path.join(dir, 'retired');
    const d = 16;
    const r = rng(77);
    const g = (): number => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
    const centres = Array.from({ length: 2 }, () => Float32Array.from({ length: d }, g));
    const near = (c: Float32Array, spread: number): Float32Array => Float32Array.from(c, (x) => x + spread * g());
    // The first segment: per topic 495 rows to delete, right at its centre, and 5 to keep a little
    // further out; then filler far from both centres for two more segments. Once the 495 are
    // gone, the 5 are each topic's nearest rows, but the first segment's graph answers a query at
    // a centre with dead rows only (it returns its best ~150).
    const first: VectorRow[] = [];
    centres.forEach((c, t) => {
      for (let j = 0; j < 500; j++) first.push({ key: j < 495 ? `d${t}-${j}` : `t${t}-${j}`, vector: near(c, j < 495 ? 0.05 : 0.3), metadata: {}, text: null });
    });
    const filler = Array.from({ length: 2000 }, (_, i): VectorRow => ({ key: `f${i}`, vector: Float32Array.from({ length: d }, g), metadata: {}, text: null }));
    const opts = { dataDir, index: indexOpts(0, 1000) };
    let s = await openEmbeddedStorage(opts);
    await s.createKeyspace({ name: 'ks', owner: null });
    await s.createTable({ keyspace: 'ks', name: 't', dimension: d, metric: 'euclidean', model: null });
    await ingest(s, 'ks', 't', first);
    await ingest(s, 'ks', 't', filler);
    await s.whenIndexed();
    assert.ok(s.indexStatus()[0].segments >= 3, JSON.stringify(s.indexStatus()[0]));
    // 99% of the first segment goes: it hands its 10 live rows back for re-indexing, and the
    // store closes (saving its index) before they are indexed again.
    await s.deleteVectors('ks', 't', first.filter((x) => x.key.startsWith('d')).map((x) => x.key));
    await s.close();

    s = await openEmbeddedStorage(opts);
    try {
      await s.whenIndexed();
      for (const [t, c] of centres.entries()) {
        const got = await s.search('ks', 't', { vector: c, metric: 'euclidean', candidates: 10, limit: 5 });
        const exact = await s.search('ks', 't', { vector: c, metric: 'euclidean', candidates: 100_000, limit: 5 });
        const kept = exact.filter((m) => m.key.startsWith(`t${t}-`));
        assert.ok(kept.length >= 3, 'the kept rows are the nearest');
        // The handed-back rows are what this is about: a filler row the walk misses at the cut is an ANN miss, not this bug.
        assert.deepEqual(brief(got.filter((m) => kept.some((k) => k.key === m.key))), brief(kept), `topic ${t}: ${JSON.stringify(brief(got))}`);
      }
    } finally {
      await s.close();
    }
  });

  it('re-scores the graphs\' candidates from the memory copy and from the database alike: exact float64 scores of the stored vectors', async () => {
    const d = 16;
    const rows = rowsOf(clustered(4000, d, 21));
    const queries = clustered(30, d, 22);
    // 0: no memory copy, stage 2 reads the database; 64 MiB: the table's rows are held in memory.
    const answers: StoredMatch[][][] = [];
    for (const vectorMemoryBytes of [0, 2 ** 26]) {
      const s = await openEmbeddedStorage({ dataDir: path.join(dir, `stage2-${vectorMemoryBytes}`), vectorMemoryBytes, index: indexOpts(0) });
      try {
        await s.createKeyspace({ name: 'ks', owner: null });
        await s.createTable({ keyspace: 'ks', name: 't', dimension: d, metric: 'cosine', model: null });
        await ingest(s, 'ks', 't', rows);
        await s.whenIndexed();
        // A row moved into a deleted row's slot must keep its own vector.
        await s.deleteVectors('ks', 't', ['k5', 'k17']);
        const got: StoredMatch[][] = [];
        for (const q of queries) got.push(await s.search('ks', 't', { vector: q, metric: 'cosine', candidates: 50, limit: 10, includeVector: true }));
        assert.equal(s.searchCounts().ann, queries.length, 'the graphs proposed the candidates');
        got.forEach((ms, i) => {
          assert.equal(ms.length, 10);
          for (const m of ms) {
            const stored = rows[Number(m.key.slice(1))].vector;
            assert.deepEqual(Array.from(m.vector!), Array.from(stored), m.key);
            assert.equal(m.score, exactScore('cosine', queries[i], stored), `${m.key}: the exact score`);
          }
        });
        answers.push(got);
      } finally {
        await s.close();
      }
    }
    // Both the same to the last bit wherever the two builds' graphs proposed the same rows.
    answers[0].forEach((ms, i) => {
      const other = new Map(answers[1][i].map((m) => [m.key, m.score]));
      for (const m of ms) if (other.has(m.key)) assert.equal(other.get(m.key), m.score);
    });
  });

  it('ANN recall@10 >= 0.9 on 20k clustered vectors with 100 candidates, and new writes are searchable at once', async () => {
    const dataDir = path.join(dir, 'recall');
    const d = 64;
    const vectors = clustered(20_000, d, 5, 200);
    const s = await openEmbeddedStorage({ dataDir, index: indexOpts(1000) });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      await s.createTable({ keyspace: 'ks', name: 't', dimension: d, metric: 'cosine', model: null });
      const t0 = performance.now();
      await ingest(s, 'ks', 't', rowsOf(vectors));
      const ingestMs = performance.now() - t0;

      // Before the index has caught up, a fresh row is found first.
      const probe = await s.search('ks', 't', { vector: vectors[19_999], metric: 'cosine', candidates: 100, limit: 1 });
      assert.equal(probe[0].key, 'k19999');

      await s.whenIndexed();
      const indexedMs = performance.now() - t0;
      const queries = clustered(100, d, 77, 200);
      let hits = 0;
      for (const q of queries) {
        const exact = await s.search('ks', 't', { vector: q, metric: 'cosine', candidates: 20_000, limit: 10 });
        const ann = await s.search('ks', 't', { vector: q, metric: 'cosine', candidates: 100, limit: 10 });
        const want = new Set(exact.map((m) => m.key));
        hits += ann.filter((m) => want.has(m.key)).length;
      }
      const recall = hits / (queries.length * 10);
      const counts = s.searchCounts();
      assert.ok(counts.ann >= queries.length, `ANN path used (${JSON.stringify(counts)})`);
      assert.ok(recall >= 0.9, `recall@10 ${recall}`);
      console.log(`# 20k x ${d}: ingest ${Math.round(20_000 / (ingestMs / 1000))} rows/s, all indexed after ${(indexedMs / 1000).toFixed(1)} s, recall@10 ${recall}`);

      // Rows written after the index caught up are scanned exactly until indexed (ANN path + pending).
      const fresh = clustered(50, d, 1234, 3);
      await s.upsertVectors('ks', 't', fresh.map((vector, i) => ({ key: `fresh${i}`, vector, metadata: {}, text: null })));
      const before = s.searchCounts().ann;
      for (let i = 0; i < fresh.length; i += 7) {
        const got = await s.search('ks', 't', { vector: fresh[i], metric: 'cosine', candidates: 100, limit: 1 });
        assert.equal(got[0].key, `fresh${i}`);
        assert.ok(Math.abs(got[0].score - 1) < 1e-6);
      }
      assert.ok(s.searchCounts().ann > before, 'the ANN path served them');
      // an overwrite moves the row at once: its old vector no longer finds it
      await s.upsertVectors('ks', 't', [{ key: 'k42', vector: fresh[0], metadata: {}, text: null }]);
      const old = await s.search('ks', 't', { vector: vectors[42], metric: 'cosine', candidates: 100, limit: 1 });
      assert.notEqual(old[0]?.key, 'k42');
      assert.deepEqual(brief(await s.search('ks', 't', { vector: fresh[0], metric: 'cosine', candidates: 100, limit: 2 })).map(([k]) => k).sort(), ['fresh0', 'k42']);
    } finally {
      await s.close();
    }
  });

  it('searches the rows of a bulk write the graphs do not hold yet by their quantised copies (cosine), with exact answers', async () => {
    const dataDir = path.join(dir, 'tail');
    const d = 48;
    const vectors = clustered(8_000, d, 21, 50);
    // Acknowledged before the graphs take any of it, so that the tail answers for nearly all.
    const s = await openEmbeddedStorage({ dataDir, index: { ...indexOpts(1000), ackRows: 1e9 } });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      for (const metric of ['cosine', 'euclidean'] as const) await s.createTable({ keyspace: 'ks', name: metric, dimension: d, metric, model: null });
      for (const metric of ['cosine', 'euclidean'] as const) await s.upsertVectors('ks', metric, rowsOf(vectors));
      // Nearly all rows still wait for the graphs: far above the share at which pending rows used to force a full float32 scan.
      for (const st of s.indexStatus()) assert.ok(st.pending > vectors.length / 2, `${st.table}: ${st.pending} pending`);
      const queries = clustered(30, d, 99, 50);
      const c0 = s.searchCounts();
      const got = await Promise.all(queries.map((vector) => s.search('ks', 'cosine', { vector, metric: 'cosine', candidates: 100, limit: 10 })));
      const c1 = s.searchCounts();
      assert.equal(c1.ann - c0.ann, queries.length, 'the graphs plus the tail answered');
      await s.search('ks', 'euclidean', { vector: queries[0], metric: 'euclidean', candidates: 100, limit: 10 });
      assert.equal(s.searchCounts().exact - c1.exact, 1, 'no quantised tail for Euclidean rows: a full exact scan');
      const exact = await Promise.all(queries.map((vector) => s.search('ks', 'cosine', { vector, metric: 'cosine', candidates: 8_000, limit: 10 })));
      let shared = 0;
      got.forEach((g, i) => {
        const want = new Map(exact[i].map((m) => [m.key, m.score]));
        for (const m of g) if (want.has(m.key) && Math.abs(want.get(m.key)! - m.score) < 1e-9) shared++;
      });
      assert.ok(shared / (queries.length * 10) >= 0.99, `agreement with exact ${shared / (queries.length * 10)}`);
      // A deleted row leaves the tail at once; an overwritten one is found by its new vector.
      await s.deleteVectors('ks', 'cosine', ['k7']);
      assert.notEqual((await s.search('ks', 'cosine', { vector: vectors[7], metric: 'cosine', candidates: 100, limit: 1 }))[0].key, 'k7');
      await s.upsertVectors('ks', 'cosine', [{ key: 'k8', vector: queries[0], metadata: {}, text: null }]);
      assert.equal((await s.search('ks', 'cosine', { vector: queries[0], metric: 'cosine', candidates: 100, limit: 1 }))[0].key, 'k8');
      await s.whenIndexed();
      assert.equal(s.indexStatus()[0].pending, 0);
    } finally {
      await s.close();
    }
  });

  it('makes a bulk load wait for the graphs before it commits once its tail reaches twice keepUpRows, so little is left unindexed when it is acknowledged', async () => {
    const d = 32;
    const vectors = clustered(6_000, d, 31, 50);
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'keepup'), index: { ...indexOpts(500), keepUpRows: 400, ackRows: 1e9 } });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      await s.createTable({ keyspace: 'ks', name: 'cosine', dimension: d, metric: 'cosine', model: null });
      let most = 0;
      for (let i = 0; i < vectors.length; i += 300) {
        // Back to back: without the wait, nothing would give the indexer a turn (thousands left waiting).
        await s.upsertVectors('ks', 'cosine', rowsOf(vectors.slice(i, i + 300)).map((r, j) => ({ ...r, key: `k${i + j}` })));
        most = Math.max(most, s.indexStatus()[0].pending);
      }
      // Each write found fewer than 800 rows waiting before it added its 300.
      assert.ok(most < 800 + 300, `most rows waiting after a write: ${most}`);
      assert.ok(most >= 800, `the writes ran ahead up to the bound: ${most}`);
      const got = await s.search('ks', 'cosine', { vector: vectors[4321], metric: 'cosine', candidates: 50, limit: 1 });
      assert.equal(got[0].key, 'k4321');
    } finally {
      await s.close();
    }
  });

  it('acknowledges a bulk write once at most ackRows of its rows wait for the graphs', async () => {
    const d = 32;
    const vectors = clustered(3_000, d, 33, 50);
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'ack'), index: { ...indexOpts(500), ackRows: 300 } });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      await s.createTable({ keyspace: 'ks', name: 'cosine', dimension: d, metric: 'cosine', model: null });
      await s.upsertVectors('ks', 'cosine', rowsOf(vectors));
      const afterBulk = s.indexStatus()[0].pending;
      assert.ok(afterBulk <= 300, `rows waiting when the bulk write was acknowledged: ${afterBulk}`);
      assert.equal((await s.search('ks', 'cosine', { vector: vectors[1234], metric: 'cosine', candidates: 50, limit: 1 }))[0].key, 'k1234');
    } finally {
      await s.close();
    }
  });

  it('keeps indexing a bulk load while searches stream in without a pause (a share of the time in short slices), and answers them meanwhile', async () => {
    const d = 16;
    const vectors = clustered(3_000, d, 41, 50);
    // No rest for the tail (ackRows 1e9 would let all 3,000 rows rest): the share is what this is about.
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'searching'), index: { ...indexOpts(500), ackRows: 1e9, tailRestMs: 0 } });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      await s.createTable({ keyspace: 'ks', name: 't', dimension: d, metric: 'cosine', model: null });
      await s.upsertVectors('ks', 't', rowsOf(vectors));
      const waiting = s.indexStatus()[0].pending;
      assert.ok(waiting > 1_500, `most rows still wait for the graphs: ${waiting}`);
      let answered = 0;
      let stop = false;
      // One client asking again as soon as it is answered (each search a new macrotask, as a request
      // from the network is): never the quiet that full-speed indexing waits for, yet the graphs must catch up.
      const client = (async () => {
        while (!stop) {
          await s.search('ks', 't', { vector: vectors[answered % 3_000], metric: 'cosine', candidates: 50, limit: 1 });
          answered++;
          await new Promise((r) => setImmediate(r));
        }
      })();
      const t0 = Date.now();
      try {
        while (s.indexStatus()[0].pending > 0) {
          assert.ok(Date.now() - t0 < 120_000, `still waiting after 120 s of searches: ${JSON.stringify(s.indexStatus()[0])}`);
          await new Promise((r) => setTimeout(r, 20));
        }
      } finally {
        stop = true;
        await client;
      }
      assert.ok(answered > 20, `searches answered while the graphs caught up: ${answered}`);
      const got = await s.search('ks', 't', { vector: vectors[2345], metric: 'cosine', candidates: 50, limit: 1 });
      assert.equal(got[0].key, 'k2345');
    } finally {
      await s.close();
    }
  });

  it("saves a delta graph again once 1,024 of its rows changed since its file, though the worker may still walk that file for it", async () => {
    const d = 16;
    const rows = rowsOf(clustered(3200, d, 11, 30));
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'delta-behind'), index: { ...indexOpts(100), settleDeadlineMs: 200 } });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      await s.createTable({ keyspace: 'ks', name: 't', dimension: d, metric: 'cosine', model: null });
      const savedSeq = () => s.indexStatus()[0].savedSeq;
      const savedAfter = async (seq: number) => {
        const t0 = Date.now();
        while (savedSeq() <= seq) {
          assert.ok(Date.now() - t0 < 10_000, `no save after seq ${seq}: ${JSON.stringify(s.indexStatus()[0])}`);
          await new Promise((r) => setTimeout(r, 10));
        }
        return savedSeq();
      };
      // A bulk load's delta is saved at its end (no timed save for an hour here).
      await ingest(s, 'ks', 't', rows.slice(0, 2000));
      await s.whenIndexed();
      const first = await savedAfter(0);
      // 1,200 rows more: few enough for the worker to go on walking the file, enough to write it again.
      await ingest(s, 'ks', 't', rows.slice(2000), 100);
      await s.whenIndexed();
      await savedAfter(first);
      const q = rows[3100].vector as Float32Array;
      assert.equal((await s.search('ks', 't', { vector: q, metric: 'cosine', candidates: 50, limit: 1 }))[0].key, rows[3100].key);
    } finally {
      await s.close();
    }
  });

  it('keeps the segment sealed at the end of a bulk load in memory while searches come, and saves and maps it once they pause or its deadline passes', async () => {
    const d = 16;
    const rows = rowsOf(clustered(3000, d, 9, 30));
    const qs = clustered(20, d, 10, 30);
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    // The copy of a saved graph waits for a gap in the searches ('gap') for up to gapPatienceMs ('deadline').
    for (const [name, deadlineMs, gapPatienceMs] of [['quiet', 60_000, 30_000], ['deadline', 1_000, 1_000], ['gap', 1_000, 30_000]] as const) {
      const dataDir = path.join(dir, `view-${name}`);
      const s = await openEmbeddedStorage({ dataDir, index: { ...indexOpts(100, 1000), settleDeadlineMs: deadlineMs, gapPatienceMs } });
      let searching: NodeJS.Timeout | undefined;
      try {
        await s.createKeyspace({ name: 'ks', owner: null });
        await s.createTable({ keyspace: 'ks', name: 't', dimension: d, metric: 'cosine', model: null });
        const ask = () => Promise.all(qs.map((vector) => s.search('ks', 't', { vector, metric: 'cosine', candidates: 100, limit: 10 })));
        const status = () => s.indexStatus()[0];
        const segmentFiles = async () => (await fs.readdir(path.join(dataDir, 'indexes'))).filter((f) => f.endsWith('.seg.usearch')).length;
        const until = async (what: string, done: () => boolean, ms: number) => {
          const t0 = Date.now();
          while (!done()) {
            assert.ok(Date.now() - t0 < ms, `${what}: ${JSON.stringify(status())}`);
            await sleep(10);
          }
        };
        // Two segments, settled with nobody searching.
        await ingest(s, 'ks', 't', rows.slice(0, 2000));
        await s.whenIndexed();
        await until('the first two segments settle', () => status().segments === 2 && status().inMemorySegments === 0, 10_000);
        // Searches every few ms from now on (never the 50 ms quiet moment); one more batch seals the third.
        searching = setInterval(() => void ask(), 5);
        await ingest(s, 'ks', 't', rows.slice(2000));
        await s.whenIndexed();
        await until('the third segment is sealed', () => status().segments === 3, 10_000);
        const sealedAt = Date.now();
        await sleep(300);
        assert.equal(status().inMemorySegments, 1, 'still searched from memory');
        assert.equal(await segmentFiles(), 2, 'not even written');
        const inMemory = await ask();
        if (name === 'quiet') {
          clearInterval(searching);
          await until('saved and mapped in the pause', () => status().inMemorySegments === 0, 4_000);
        } else if (name === 'deadline') {
          await until('saved and mapped by its deadline and the copy\'s patience though searches never paused', () => status().inMemorySegments === 0, 6_000);
          assert.ok(Date.now() - sealedAt >= 1_500, 'not before its deadline and the copy\'s patience');
          assert.equal(status().coldSegments, 0, 'walked through as it was mapped, not left to the searches to fault in');
          clearInterval(searching);
        } else {
          // Saved at its deadline, but the copy waits while the searches keep coming.
          await sleep(2_500);
          assert.equal(status().inMemorySegments, 1, 'not mapped while searches stream in');
          clearInterval(searching);
          await until('copied and mapped once they pause', () => status().inMemorySegments === 0, 4_000);
        }
        assert.equal(await segmentFiles(), 3);
        assertSameAnswers(await ask(), inMemory);
      } finally {
        clearInterval(searching);
        await s.close();
      }
    }
    // Reopened while searches keep coming: the graphs opened at start are walked through by their deadline.
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'view-deadline'), index: indexOpts(100, 1000) });
    const searching = setInterval(() => void Promise.all(qs.map((vector) => s.search('ks', 't', { vector, metric: 'cosine', candidates: 100, limit: 10 }))), 5);
    try {
      const t0 = Date.now();
      while (!(s.indexStatus()[0].segments === 3 && s.indexStatus()[0].coldSegments === 0)) {
        assert.ok(Date.now() - t0 < 8_000, `graphs opened at start still cold: ${JSON.stringify(s.indexStatus()[0])}`);
        await sleep(10);
      }
    } finally {
      clearInterval(searching);
      await s.close();
    }
  });

  it('ANN answers carry the same metadata, text and vector as exact ones, and only their own table', async () => {
    const dataDir = path.join(dir, 'ann-fields');
    const d = 16;
    const vectors = clustered(3_000, d, 11, 30);
    const s = await openEmbeddedStorage({ dataDir, index: indexOpts(1000) });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      for (const t of ['a', 'b']) await s.createTable({ keyspace: 'ks', name: t, dimension: d, metric: 'dot_product', model: null });
      await ingest(s, 'ks', 'a', rowsOf(vectors, 'a'));
      // The same vectors in the other table: its rows would tie with every answer if they leaked in.
      await ingest(s, 'ks', 'b', rowsOf(vectors, 'b'));
      await s.deleteVectors('ks', 'a', ['a7', 'a8']);
      await s.whenIndexed();
      const before = s.searchCounts().ann;
      for (const q of clustered(20, d, 12, 30)) {
        const ann = await s.search('ks', 'a', { vector: q, metric: 'dot_product', candidates: 40, limit: 5, includeVector: true });
        const exact = new Map((await s.search('ks', 'a', { vector: q, metric: 'dot_product', candidates: 3_000, limit: 40, includeVector: true })).map((m) => [m.key, m]));
        assert.equal(ann.length, 5);
        for (const m of ann) {
          assert.match(m.key, /^a/);
          assert.ok(!['a7', 'a8'].includes(m.key), 'deleted rows stay out');
          const i = Number(m.key.slice(1));
          assert.deepEqual(m.metadata, { i, bucket: i % 5 });
          assert.equal(m.text, i % 3 === 0 ? `text ${i}` : null);
          assert.deepEqual(m.vector, vectors[i]);
          const e = exact.get(m.key);
          if (e) assert.equal(m.score, e.score);
        }
      }
      assert.equal(s.searchCounts().ann, before + 20, 'the ANN path answered');
    } finally {
      await s.close();
    }
  });

  it('keeps every acknowledged write through a kill -9', async () => {
    const dataDir = path.join(dir, 'killed');
    const script = path.join(dir, 'writer.mts');
    const modulePath = new URL('./embedded-storage.ts', import.meta.url).pathname;
    await fs.writeFile(
      script,
      `import { openEmbeddedStorage } from ${JSON.stringify(modulePath)};
       const s = await openEmbeddedStorage({ dataDir: ${JSON.stringify(dataDir)}, index: { saveEveryChanges: 1e9, saveEveryMs: 3.6e6, exactBelowRows: 0 } });
       await s.createKeyspace({ name: 'ks', owner: null });
       await s.createTable({ keyspace: 'ks', name: 't', dimension: 3, metric: 'euclidean', model: null });
       for (let i = 0; i < 50; i++) {
         await s.upsertVectors('ks', 't', [{ key: 'k' + i, vector: Float32Array.of(i, 1, 2), metadata: { i }, text: 'marker' + i }]);
         process.stdout.write('ack ' + i + '\\n');
       }
       setInterval(() => {}, 1000);`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let acked = -1;
    await new Promise<void>((resolve, reject) => {
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (chunk: string) => {
        for (const m of chunk.matchAll(/ack (\d+)/g)) acked = Math.max(acked, Number(m[1]));
        if (acked >= 30) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.on('exit', () => resolve());
      child.on('error', reject);
    });
    await exited;
    assert.ok(acked >= 30, `child acknowledged ${acked} writes`);
    const s = await openEmbeddedStorage({ dataDir, index: indexOpts(0) });
    try {
      const n = await s.countVectors('ks', 't');
      assert.ok(n >= acked + 1, `${n} rows after ${acked + 1} acknowledged writes`);
      for (let i = 0; i <= acked; i++) assert.deepEqual((await s.getVector('ks', 't', `k${i}`))?.metadata, { i });
      // The lexical index is written in the row's transaction: every acknowledged text is found by its words.
      for (let i = 0; i <= acked; i++) assert.deepEqual((await s.lexicalSearch('ks', 't', { text: `marker${i}`, limit: 2 })).map((m) => m.key), [`k${i}`]);
      const hits = await s.search('ks', 't', { vector: Float32Array.of(7, 1, 2), metric: 'euclidean', candidates: 100, limit: 1 });
      assert.equal(hits[0].key, 'k7');
    } finally {
      await s.close();
    }
  });

  it("lists a walked search's rows by ref as search answers them, each ref its own row's: more candidates than are kept", async () => {
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'walked'), index: indexOpts(0) });
    try {
      await s.createKeyspace({ name: 'ks', owner: null });
      await s.createTable({ keyspace: 'ks', name: 'walked', dimension: 8, metric: 'cosine', model: null });
      const r = mulberry32(11);
      const point = () => Float32Array.from({ length: 8 }, () => r() - 0.5);
      await s.upsertVectors('ks', 'walked', Array.from({ length: 4000 }, (_, i) => ({ key: `w${i}`, vector: point(), metadata: {}, text: null })));
      await s.whenIndexed();
      const ann = s.searchCounts().ann;
      for (let q = 0; q < 20; q++) {
        // Fewer candidates than a 64th of the rows: the graphs are walked.
        const query = { vector: point(), metric: 'cosine' as const, candidates: 40, limit: 10 };
        const [listed, searched] = await Promise.all([s.searchRefs('ks', 'walked', query), s.search('ks', 'walked', query)]);
        const read = await s.readMatches('ks', 'walked', listed.map((m) => m.ref));
        assert.deepEqual(listed.map((m) => ({ key: read.get(m.ref)?.key, score: m.score })), searched.map((m) => ({ key: m.key, score: m.score })), `query ${q}`);
      }
      assert.equal(s.searchCounts().ann - ann, 40, 'every search walked the graphs');
    } finally {
      await s.close();
    }
  });

  it("starts the caller's work beside a walked search at once, or once the walks are done where stage 2 reads the database", async () => {
    const r = mulberry32(12);
    const point = () => Float32Array.from({ length: 8 }, () => r() - 0.5);
    const rows = Array.from({ length: 4000 }, (_, i) => ({ key: `b${i}`, vector: point(), metadata: { i }, text: null }));
    // 0: no memory copy of the vectors, stage 2 reads them from the database.
    for (const vectorMemoryBytes of [0, 2 ** 26]) {
      const s = await openEmbeddedStorage({ dataDir: path.join(dir, `beside-${vectorMemoryBytes}`), vectorMemoryBytes, index: indexOpts(0) });
      try {
        await s.createKeyspace({ name: 'ks', owner: null });
        await s.createTable({ keyspace: 'ks', name: 'b', dimension: 8, metric: 'cosine', model: null });
        await s.upsertVectors('ks', 'b', rows);
        await s.whenIndexed();
        const ann = s.searchCounts().ann;
        for (const filter of [undefined, { i: { $lt: 100 } }]) {
          let calls = 0;
          const query = { vector: point(), metric: 'cosine' as const, candidates: 40, limit: 10, filter, startBeside: () => void calls++ };
          const answer = s.searchRefs('ks', 'b', query);
          // Where the graphs are walked and stage 2 reads the database, not before the walks.
          assert.equal(calls, filter === undefined && vectorMemoryBytes === 0 ? 0 : 1, `at once, filter ${JSON.stringify(filter)}, memory ${vectorMemoryBytes}`);
          assert.equal((await answer).length, 10);
          assert.equal(calls, 1, 'once, before the answer');
        }
        assert.equal(s.searchCounts().ann - ann, 1, 'the unfiltered search walked the graphs');
      } finally {
        await s.close();
      }
    }
  });

  it('refuses calls after close and maps them to storage_unavailable', async () => {
    const s = await openEmbeddedStorage({ dataDir: path.join(dir, 'closed'), index: indexOpts(0) });
    await s.close();
    await assert.rejects(s.listKeyspaces(), (e: { code?: string }) => e.code === 'storage_unavailable');
  });
});
