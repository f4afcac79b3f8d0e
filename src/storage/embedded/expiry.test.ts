/**
 * The embedded backend's own TTL cases (the shared ones are in contract-ttl.case.ts): the expiry
 * tracker, expired rows among ANN candidates, and the sweep's removal in bounded batches.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { exactScore, compareScores } from '../../index/metric.ts';
import type { VectorRow } from '../api.ts';
import { openEmbeddedStorage, type EmbeddedStorage } from './embedded-storage.ts';
import { ExpiryTracker } from './expiry.ts';
import { ExpirySweep } from './expiry-sweep.ts';

describe('ExpiryTracker', () => {
  it('lists rows as they expire, and forgets rewritten and deleted ones', () => {
    const tr = new ExpiryTracker();
    tr.set(1, 100);
    tr.set(2, 200);
    tr.set(3, 300);
    tr.set(4, null);
    const expired = (now: number): number[] => {
      const set = tr.expired(now);
      const ids = [1, 2, 3, 4].filter((id) => set.has(id));
      assert.equal(set.size, ids.length);
      return ids;
    };
    assert.deepEqual(expired(99), []);
    assert.deepEqual(expired(100), [1]);
    tr.set(2, 1_000); // moved later before it expired
    tr.set(1, null); // rewritten without a TTL after it expired
    assert.deepEqual(expired(300), [3]);
    tr.removed([3]);
    assert.deepEqual(expired(999), []);
    assert.deepEqual(expired(1_000), [2]);
    assert.equal(tr.size, 1);
  });

  it('moves a group of rows sharing an expiry at once, leaving out the ones rewritten or deleted before it, unless their id came back with that expiry', () => {
    const tr = new ExpiryTracker();
    for (let id = 1; id <= 6; id++) tr.set(id, 100);
    tr.set(2, 200); // moved later
    tr.removed([3]); // deleted...
    tr.removed([4]);
    tr.set(4, 100); // ...and its id reused by a new row with the same expiry
    tr.set(5, 100); // rewritten with the same expiry
    tr.set(6, null); // its TTL dropped
    const ids = (now: number): number[] => {
      const set = tr.expired(now);
      return [1, 2, 3, 4, 5, 6].filter((id) => set.has(id));
    };
    assert.deepEqual(ids(100), [1, 4, 5]);
    assert.equal(tr.expired(100).size, 3);
    assert.deepEqual(tr.takeExpired(100, 10).sort(), [1, 4, 5]);
    assert.deepEqual(ids(200), [1, 2, 4, 5]);
  });

  it('hands expired rows to the sweep in batches, oldest first, each once, skipping rewritten and removed ones', () => {
    const tr = new ExpiryTracker();
    for (let id = 1; id <= 10; id++) tr.set(id, 100 + id);
    assert.deepEqual(tr.takeExpired(100, 5), []);
    assert.deepEqual(tr.takeExpired(104, 2), [1, 2]);
    tr.set(3, null); // rewritten without a TTL after it expired: not the sweep's any more
    tr.removed([4]);
    assert.deepEqual(tr.takeExpired(110, 3), [5, 6, 7]);
    tr.retake([6]); // its removal failed: handed out again
    assert.deepEqual(tr.takeExpired(110, 10), [8, 9, 10, 6]);
    assert.deepEqual(tr.takeExpired(1_000, 10), []);
  });

  it('hands expired rows out of the graphs once each, ahead of the sweep, and counts the ones the graphs may still hold', () => {
    const tr = new ExpiryTracker();
    for (let id = 1; id <= 6; id++) tr.set(id, 100 + id);
    tr.set(7, 500);
    assert.deepEqual(tr.takeForGraphs(100, 10), []);
    assert.equal(tr.indexedExpired, 0);
    assert.deepEqual(tr.takeForGraphs(106, 2), [1, 2]);
    assert.deepEqual([tr.unindexed, tr.indexedExpired], [2, 4]);
    tr.removed([3]);
    tr.set(4, null); // rewritten after it expired: the graphs take it again
    assert.deepEqual(tr.takeForGraphs(106, 10), [5, 6]);
    assert.deepEqual([tr.unindexed, tr.indexedExpired], [4, 0]);
    assert.ok(tr.has(1) && !tr.has(4), 'the rows index upkeep must not re-index');
    // The sweep still deletes them all, whether or not the graphs let them go first.
    assert.deepEqual(tr.takeExpired(106, 10), [1, 2, 5, 6]);
    tr.removed([1, 2]);
    assert.deepEqual([tr.unindexed, tr.indexedExpired], [2, 0]);
    assert.deepEqual(tr.takeForGraphs(500, 10), [7]);
  });
});

describe('ExpirySweep', () => {
  it('takes expired rows out of the indexes first, and rows expiring meanwhile before each deletion batch; counts deletions only', async () => {
    const calls: string[] = [];
    let graphs = 25; // rows waiting to leave the graphs (batches of 10 here)
    let rows = 25; // rows waiting to be deleted (batches of 1)
    const sweep = new ExpirySweep(
      { batchRows: 1, intervalMs: 3_600_000 },
      {
        unindex: (max) => {
          const n = Math.min(max, graphs);
          graphs -= n;
          if (n > 0) calls.push(`u${n}`);
          return n;
        },
        remove: [
          () => {
            if (rows === 0) return 0;
            rows--;
            if (rows === 22) graphs += 3; // three more rows expire during the pass
            calls.push('r');
            return 1;
          },
        ],
      },
    );
    assert.equal(await sweep.run(), 25);
    assert.deepEqual(calls.slice(0, 7), ['u10', 'u10', 'u5', 'r', 'r', 'r', 'u3']);
    assert.equal(graphs, 0);
    await sweep.close();
  });
});

describe('embedded TTL', () => {
  let dir: string;
  let s: EmbeddedStorage;
  let now = Date.now();
  const D = 8;
  const vec = (i: number): Float32Array => Float32Array.from({ length: D }, (_, j) => Math.sin(i * 7.1 + j * 1.3) + (j === 0 ? 1.5 : 0));

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-ttl-'));
    s = await openEmbeddedStorage({
      dataDir: dir,
      index: { saveEveryChanges: 1_000_000, saveEveryMs: 3_600_000, exactBelowRows: 0 },
      clock: () => now,
      // Only the test runs passes (sweepExpired), in batches of 100.
      ttlSweep: { batchRows: 100, intervalMs: 3_600_000 },
    });
    await s.createKeyspace({ name: 'ks', owner: null });
  });
  after(async () => {
    await s.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('an ANN search over-fetches past expired candidates: a full page of the live rows', async () => {
    await s.createTable({ keyspace: 'ks', name: 'ann', dimension: D, metric: 'cosine', model: null });
    const query = vec(5);
    const rows: VectorRow[] = Array.from({ length: 4000 }, (_, i) => ({ key: `r${i}`, vector: vec(i), metadata: {}, text: null }));
    // The 300 rows nearest the query expire.
    const nearest = rows
      .map((r) => ({ key: r.key, score: exactScore('cosine', query, r.vector) }))
      .sort(compareScores('cosine'))
      .slice(0, 300)
      .map((x) => x.key);
    const doomed = new Set(nearest);
    for (const r of rows) if (doomed.has(r.key)) r.expiresAt = now + 60_000;
    await s.upsertVectors('ks', 'ann', rows);
    await s.whenIndexed();
    now += 61_000;
    const before = s.searchCounts().ann;
    const found = await s.search('ks', 'ann', { vector: query, metric: 'cosine', candidates: 20, limit: 10 });
    assert.equal(s.searchCounts().ann, before + 1, 'the graphs answered stage 1');
    assert.equal(found.length, 10);
    assert.deepEqual(found.filter((m) => doomed.has(m.key)), []);
    const live = rows.filter((r) => !doomed.has(r.key));
    const want = live
      .map((r) => ({ key: r.key, score: exactScore('cosine', query, r.vector) }))
      .sort(compareScores('cosine'))
      .slice(0, 10)
      .map((x) => x.key);
    // An ANN answer: most of the exact best live rows.
    const overlap = found.filter((m) => want.includes(m.key)).length;
    assert.ok(overlap >= 8, `recall ${overlap}/10`);
    assert.equal(await s.countVectors('ks', 'ann'), 3700);
  });

  it('the sweep removes expired rows in bounded batches, yielding to searches between them', async () => {
    await s.createTable({ keyspace: 'ks', name: 'sweep', dimension: D, metric: 'cosine', model: null });
    const written = now;
    const rows: VectorRow[] = Array.from({ length: 1000 }, (_, i) => ({ key: `s${i}`, vector: vec(i), metadata: { i }, text: `word${i % 10} common`, expiresAt: i < 950 ? now + 1_000 : null }));
    await s.upsertVectors('ks', 'sweep', rows);
    now += 2_000;
    let swept = false;
    const pass = s.sweepExpired().then((n) => ((swept = true), n));
    // The pass deletes 100 rows a turn: a search asked meanwhile is answered before it ends.
    const found = await s.search('ks', 'sweep', { vector: vec(1), metric: 'cosine', candidates: 100, limit: 100 });
    assert.equal(swept, false, 'the search waited for the whole pass');
    assert.deepEqual(found.map((m) => m.key).sort(), Array.from({ length: 50 }, (_, i) => `s${950 + i}`).sort());
    // Both tables' expired rows (300 + 950), and nothing else.
    assert.equal(await pass, 1250);
    assert.equal(await s.sweepExpired(), 0);
    // Removed, not merely hidden: with the clock back before expiry they are still gone.
    now = written;
    assert.equal(await s.getVector('ks', 'sweep', 's0'), null);
    assert.equal(await s.countVectors('ks', 'sweep'), 50);
    assert.equal(s.indexStatus().find((t) => t.table === 'sweep')!.rows, 50);
    assert.deepEqual((await s.lexicalSearch('ks', 'sweep', { text: 'word3', limit: 100 })).map((m) => m.key).sort(), ['s953', 's963', 's973', 's983', 's993']);
    assert.equal((await s.lexicalSearch('ks', 'sweep', { text: 'common', limit: 100 })).length, 50);
    now += 10_000;
  });

  it('before the sweep, graph walks and scans skip expired rows; one rewritten without a TTL is found again', async () => {
    await s.createTable({ keyspace: 'ks', name: 'revive', dimension: D, metric: 'cosine', model: null });
    // Three rows in five expire: scans take their packed path (exact.ts), walks over-fetch.
    const rows: VectorRow[] = Array.from({ length: 4000 }, (_, i) => ({ key: `v${i}`, vector: vec(i), metadata: {}, text: null, expiresAt: i % 5 < 3 ? now + 1_000 : null }));
    await s.upsertVectors('ks', 'revive', rows);
    await s.whenIndexed();
    now += 2_000;
    const expired = (key: string): boolean => Number(key.slice(1)) % 5 < 3;
    const counts = { ...s.searchCounts() };
    // ANN (the table's metric) and the exact scan (another metric: the graphs cannot rank it).
    const ann = (await s.search('ks', 'revive', { vector: vec(1), metric: 'cosine', candidates: 20, limit: 10 })).map((m) => m.key);
    const exact = (await s.search('ks', 'revive', { vector: vec(1), metric: 'euclidean', candidates: 20, limit: 10 })).map((m) => m.key);
    assert.equal(s.searchCounts().ann, counts.ann + 1);
    assert.equal(s.searchCounts().exact, counts.exact + 1);
    for (const found of [ann, exact]) {
      assert.equal(found.length, 10);
      assert.deepEqual(found.filter(expired), []);
    }
    await s.upsertVectors('ks', 'revive', [{ key: 'v1', vector: vec(1), metadata: {}, text: null }]);
    assert.equal((await s.search('ks', 'revive', { vector: vec(1), metric: 'cosine', candidates: 20, limit: 10 }))[0].key, 'v1');
    assert.equal((await s.search('ks', 'revive', { vector: vec(1), metric: 'euclidean', candidates: 20, limit: 10 }))[0].key, 'v1');
    assert.equal(await s.countVectors('ks', 'revive'), 1601);
    // The sweep then takes the other 2,399 and leaves the rewritten row.
    assert.equal(await s.sweepExpired(), 2399);
    assert.equal(s.indexStatus().find((t) => t.table === 'revive')!.rows, 1601);
    assert.ok(await s.getVector('ks', 'revive', 'v1'));
    now += 10_000;
  });

  it('the sweep takes expired rows out of the graphs before deleting them; the live rows of a graph left mostly dead are re-indexed, with no rebuild', async () => {
    const sub = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-ttl-graphs-'));
    const logged: string[] = [];
    const g = await openEmbeddedStorage({
      dataDir: sub,
      index: { saveEveryChanges: 1_000_000, saveEveryMs: 3_600_000, exactBelowRows: 0 },
      clock: () => now,
      ttlSweep: { batchRows: 100, intervalMs: 3_600_000 },
      log: (msg) => logged.push(msg),
    });
    try {
      await g.createKeyspace({ name: 'ks', owner: null });
      await g.createTable({ keyspace: 'ks', name: 't', dimension: D, metric: 'cosine', model: null });
      // Nine rows in ten expire; the graph (one delta) holds all 3,000. Spread out (vec() repeats
      // every 100 rows): near-duplicates would make "the exact best ten" a draw among dozens.
      const spread = (i: number): Float32Array => Float32Array.from({ length: D }, (_, j) => ((Math.sin(i * 12.9898 + j * 78.233) * 43758.5453) % 1) + (j === 0 ? 1 : 0));
      const rows: VectorRow[] = Array.from({ length: 3000 }, (_, i) => ({ key: `g${i}`, vector: spread(i), metadata: {}, text: null, expiresAt: i % 10 === 0 ? null : now + 1_000 }));
      await g.upsertVectors('ks', 't', rows);
      await g.whenIndexed();
      now += 2_000;
      const live = rows.filter((r) => r.expiresAt === null);
      const best = (q: Float32Array): string[] =>
        live
          .map((r) => ({ key: r.key, score: exactScore('cosine', q, r.vector) }))
          .sort(compareScores('cosine'))
          .slice(0, 10)
          .map((x) => x.key);
      const checkSearch = async (i: number): Promise<void> => {
        const found = (await g.search('ks', 't', { vector: spread(i + 0.5), metric: 'cosine', candidates: 20, limit: 10 })).map((m) => m.key);
        assert.equal(found.length, 10);
        assert.ok(found.every((k) => Number(k.slice(1)) % 10 === 0), `an expired row answered: ${found.join()}`);
        const want = best(spread(i + 0.5));
        assert.ok(found.filter((k) => want.includes(k)).length >= 8, `recall for query ${i}: ${found.join()} against ${want.join()}`);
      };
      // Watch the pass turn by turn: the graphs let the 2,700 expired rows go while nearly all of
      // them are still stored, and searches in between answer live rows only.
      const seen: { indexed: number; rows: number }[] = [];
      let done = false;
      const pass = g.sweepExpired().then((n) => ((done = true), n));
      for (let turn = 0; !done; turn++) {
        const st = g.indexStatus()[0];
        seen.push({ indexed: st.indexed, rows: st.rows });
        if (turn % 5 === 0) await checkSearch(turn);
        await new Promise((r) => setImmediate(r));
      }
      assert.equal(await pass, 2700);
      assert.ok(
        seen.some((x) => x.indexed <= 300 && x.rows >= 2500),
        `the graphs still held expired rows while they were deleted: ${JSON.stringify(seen.slice(0, 12))}`,
      );
      await g.whenIndexed();
      const st = g.indexStatus()[0];
      assert.deepEqual([st.rows, st.indexed, st.pending, st.segments], [300, 300, 0, 0], 'the live rows re-indexed, the retired graph dropped');
      for (let i = 0; i < 30; i += 3) await checkSearch(i);
      assert.deepEqual(logged.filter((m) => /rebuild/i.test(m)), [], 'rows out of the graphs ahead of their deletion are not damage');
    } finally {
      await g.close();
      await fs.rm(sub, { recursive: true, force: true });
    }
  });

  it('expired rows stay invisible after a restart, and are swept then', async () => {
    await s.createTable({ keyspace: 'ks', name: 'restart', dimension: D, metric: 'cosine', model: null });
    await s.upsertVectors('ks', 'restart', [
      { key: 'a', vector: vec(1), metadata: {}, text: null, expiresAt: now + 1_000 },
      { key: 'b', vector: vec(2), metadata: {}, text: null },
    ]);
    await s.close();
    now += 2_000;
    s = await openEmbeddedStorage({ dataDir: dir, index: { saveEveryChanges: 1_000_000, saveEveryMs: 3_600_000, exactBelowRows: 0 }, clock: () => now, ttlSweep: { batchRows: 100, intervalMs: 3_600_000 } });
    assert.equal(await s.countVectors('ks', 'restart'), 1);
    assert.deepEqual((await s.search('ks', 'restart', { vector: vec(1), metric: 'cosine', candidates: 10, limit: 10 })).map((m) => m.key), ['b']);
    assert.equal(await s.sweepExpired(), 1);
  });
});
