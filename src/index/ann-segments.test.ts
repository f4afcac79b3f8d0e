import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { SegmentedAnn } from './ann-segments.ts';
import { newGraphClaims } from './graph-claims.ts';
import { GraphWorker } from './graph-worker.ts';
import { ANN_PARAMS } from './graph-params.ts';
import { QuantisedTail } from './quantised-tail.ts';
import { YieldSignal } from '../platform/yield-signal.ts';
import { tempDirForSuite } from '../platform/temp-dir-test-support.ts';

function rng(seed: number): () => number {
  return () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
}

const d = 16;
function randomRows(n: number, seed: number): Float32Array {
  const r = rng(seed);
  return Float32Array.from({ length: n * d }, () => r() - 0.5);
}

/** Brute-force nearest row ids by cosine among `live`. */
function truth(q: Float32Array, vectors: Map<number, Float32Array>, k: number): number[] {
  const cos = (v: Float32Array) => {
    let dot = 0, a = 0, b = 0;
    for (let i = 0; i < d; i++) { dot += q[i] * v[i]; a += q[i] * q[i]; b += v[i] * v[i]; }
    return dot / Math.sqrt(a * b);
  };
  return [...vectors].map(([id, v]) => [id, cos(v)] as const).sort((x, y) => y[1] - x[1]).slice(0, k).map(([id]) => id);
}

/** Four sealed segments of 1,000 rows each (row ids 0..3999), in memory until saved. */
function fourSegments(seed: number): { ann: SegmentedAnn; data: Float32Array } {
  const ann = SegmentedAnn.create(d, 'cosine');
  const data = randomRows(4000, seed);
  for (let s = 0; s < 4; s++) {
    ann.add(Array.from({ length: 1000 }, (_, i) => s * 1000 + i), data.subarray(s * 1000 * d, (s + 1) * 1000 * d));
    ann.seal();
  }
  return { ann, data };
}

/** Waits until the worker has opened what it was told to. */
async function synced(worker: GraphWorker): Promise<void> {
  while (worker.syncing) await new Promise((r) => setTimeout(r, 5));
}

/** Tells the worker about each index's files and waits until it has them open. */
async function shared(worker: GraphWorker, ...anns: SegmentedAnn[]): Promise<void> {
  for (const ann of anns) ann.shareWith(worker);
  await synced(worker);
}

describe('SegmentedAnn', () => {
  const dir = tempDirForSuite('vss-annseg-');

  it('searches sealed segments and the delta together, and forgets replaced and removed rows', () => {
    const ann = SegmentedAnn.create(d, 'cosine');
    const data = randomRows(3000, 3);
    const live = new Map<number, Float32Array>();
    for (let s = 0; s < 3; s++) {
      const ids = Array.from({ length: 1000 }, (_, i) => s * 1000 + i);
      ann.add(ids, data.subarray(s * 1000 * d, (s + 1) * 1000 * d));
      ids.forEach((id) => live.set(id, data.subarray(id * d, id * d + d)));
      if (s < 2) ann.seal();
    }
    assert.deepEqual(ann.stats(), { segments: 2, deltaRows: 1000, deadRows: 0 });
    assert.equal(ann.size, 3000);

    // Row 5 (in the first sealed segment) gets a new vector: its old copy dies.
    const moved = Float32Array.from({ length: d }, (_, i) => (i === 0 ? 1 : 0));
    ann.add([5], moved);
    live.set(5, moved);
    ann.remove([10, 1500, 2500]);
    for (const id of [10, 1500, 2500]) live.delete(id);
    assert.equal(ann.size, live.size);
    assert.equal(ann.stats().deadRows, 3); // 5 and 10 in segment one, 1500 in segment two

    assert.equal(ann.search(moved, 1)[0], 5);
    const r = rng(9);
    let hit = 0;
    for (let t = 0; t < 30; t++) {
      const q = Float32Array.from({ length: d }, () => r() - 0.5);
      const got = ann.search(q, 50);
      assert.equal(new Set(got).size, got.length, 'no row twice');
      for (const id of [10, 1500, 2500]) assert.ok(!got.includes(id), 'removed rows never come back');
      const want = truth(q, live, 10);
      hit += want.filter((id) => got.includes(id)).length;
    }
    assert.ok(hit / 300 >= 0.95, `recall ${hit / 300}`);
  });

  it('retires a mostly dead segment and drops it once every row has moved on', () => {
    const ann = SegmentedAnn.create(d, 'cosine');
    const data = randomRows(200, 4);
    ann.add(Array.from({ length: 100 }, (_, i) => i), data.subarray(0, 100 * d));
    ann.seal();
    ann.remove(Array.from({ length: 40 }, (_, i) => i));
    const back = ann.retire(0.3, (id) => id !== 99);
    assert.deepEqual(back, Array.from({ length: 59 }, (_, i) => 40 + i), 'live rows, not the ones the table lost');
    assert.deepEqual(ann.retire(0.3, () => true), [], 'only once');
    assert.equal(ann.prune(), 0);
    ann.add(back, data.subarray(100 * d, (100 + back.length) * d));
    ann.remove([99]);
    assert.equal(ann.prune(), 1);
    assert.deepEqual(ann.stats(), { segments: 0, deltaRows: 59, deadRows: 0 });
  });

  it('retires a delta left mostly removed: its live rows go back, searches no longer walk it, and it drops once they moved on', () => {
    const ann = SegmentedAnn.create(d, 'cosine');
    const data = randomRows(3000, 6);
    ann.add(Array.from({ length: 2000 }, (_, i) => i), data.subarray(0, 2000 * d));
    ann.remove(Array.from({ length: 1000 }, (_, i) => i));
    assert.deepEqual(ann.retire(0.3, () => true), [], 'a third removed: below the share');
    ann.remove(Array.from({ length: 500 }, (_, i) => 1000 + i));
    // Row 1999 the table lost meanwhile (not yet removed here): not handed back.
    const back = ann.retire(0.3, (id) => id !== 1999);
    assert.deepEqual(back, Array.from({ length: 499 }, (_, i) => 1500 + i));
    assert.deepEqual(ann.stats(), { segments: 1, deltaRows: 0, deadRows: 0 });
    assert.deepEqual(ann.retire(0.3, () => true), [], 'only once');
    // Its rows are the caller's to scan until re-added: a search walks only the (empty) delta.
    assert.deepEqual(ann.search(data.subarray(1600 * d, 1601 * d), 10), []);
    ann.add(back, data.subarray(1500 * d, 1999 * d));
    // Re-added rows are found first by their own vectors: all but at most one of ten, since a graph
    // built on several threads can leave a node no walk reaches (1 self-search in 1,500 failed so
    // on a loaded machine).
    const found = Array.from({ length: 10 }, (_, i) => 1500 + i * 49).filter((id) => ann.search(data.subarray(id * d, id * d + d), 10)[0] === id);
    assert.ok(found.length >= 9, `found first: ${found}`);
    ann.remove([1999]);
    assert.equal(ann.prune(), 1);
    assert.deepEqual(ann.stats(), { segments: 0, deltaRows: 499, deadRows: 0 });
  });

  it('saves, maps sealed segments from their files, reopens with the same answers, and refuses damage', async () => {
    const sub = path.join(dir(), 'save');
    const ann = SegmentedAnn.create(d, 'euclidean');
    const data = randomRows(2500, 5);
    ann.add(Array.from({ length: 1000 }, (_, i) => i), data.subarray(0, 1000 * d));
    ann.seal();
    ann.add(Array.from({ length: 1000 }, (_, i) => 1000 + i), data.subarray(1000 * d, 2000 * d));
    await ann.save(sub, '7', 41, 'db');
    assert.equal(ann.unviewed, 1, 'the sealed segment waits in memory');
    ann.seal();
    ann.add(Array.from({ length: 500 }, (_, i) => 2000 + i), data.subarray(2000 * d, 2500 * d));
    ann.remove([3, 1003, 2003]);
    const signal = new YieldSignal(100); // waits at most 100 ms for a gap in these searches
    const searching = setInterval(() => signal.searchStarted(), 1); // searches while it saves
    await ann.save(sub, '7', 42, 'db', { yieldTo: signal }).finally(() => clearInterval(searching));
    assert.ok(signal.rests >= 1, 'the copies gave way to the searches');
    assert.equal(ann.unviewed, 2);
    const qs = Array.from({ length: 10 }, (_, i) => data.subarray((i * 97) * d, (i * 97) * d + d));
    const inMemory = qs.map((q) => ann.search(q, 20));
    assert.equal(ann.viewSaved(), 2);
    assert.equal(ann.unviewed, 0);
    assert.equal(ann.viewSaved(), 0, 'only once');
    const files = await fs.readdir(sub);
    assert.equal(files.filter((f) => f.endsWith('.seg.usearch')).length, 2);
    assert.equal(files.filter((f) => f.endsWith('.delta.usearch')).length, 1, 'the first delta file is gone');

    const before = qs.map((q) => ann.search(q, 20));
    assert.deepEqual(before, inMemory, 'the mapped files answer as the graphs in memory did');
    const opened = await SegmentedAnn.open(sub, '7', { dimension: d, metric: 'euclidean', tag: 'db' });
    assert.ok(opened);
    assert.equal(opened.seq, 42);
    assert.equal(opened.ann.size, 2497);
    assert.deepEqual(opened.ann.stats(), ann.stats());
    assert.deepEqual(qs.map((q) => opened.ann.search(q, 20)), before);

    assert.equal(await SegmentedAnn.open(sub, '7', { dimension: d, metric: 'euclidean', tag: 'other' }), null);
    assert.equal(await SegmentedAnn.open(sub, '8', { dimension: d, metric: 'euclidean', tag: 'db' }), null);
    const seg = path.join(sub, files.find((f) => f.endsWith('.seg.usearch'))!);
    const good = await fs.readFile(seg);
    const bad = Buffer.from(good);
    bad[bad.length >> 1] ^= 0xff;
    await fs.writeFile(seg, bad);
    assert.equal(await SegmentedAnn.open(sub, '7', { dimension: d, metric: 'euclidean', tag: 'db' }), null, 'one flipped byte');
    await fs.writeFile(seg, good);
    await fs.rm(`${seg}.ids`);
    assert.equal(await SegmentedAnn.open(sub, '7', { dimension: d, metric: 'euclidean', tag: 'db' }), null, 'missing row ids');

    SegmentedAnn.removeFiles(sub, '7');
    assert.deepEqual(await fs.readdir(sub), []);
  });

  it('leaves no graph file behind from a failed save, even one whose write ends after the failure', async (t) => {
    // A full disk failed the delta's row ids while its graph was still being written; the graph
    // then landed under its name after the clean-up had run, named by no manifest, for good.
    const sub = path.join(dir(), 'failed-save');
    const ann = SegmentedAnn.create(d, 'cosine');
    ann.add(Array.from({ length: 500 }, (_, i) => i), randomRows(500, 9));
    t.mock.method(Date, 'now', () => 1_000);
    // The delta's row ids cannot land: a directory holds their file's name.
    await fs.mkdir(path.join(sub, `f-${process.pid}-1000-0.delta.usearch.ids`, 'in-the-way'), { recursive: true });
    // Searches for the first 300 ms: the graph's hash rests meanwhile, so it ends well after the ids failed.
    const signal = new YieldSignal(5_000);
    const searching = setInterval(() => signal.searchStarted(), 1);
    setTimeout(() => clearInterval(searching), 300);
    await assert.rejects(ann.save(sub, 'f', 1, 'db', { yieldTo: signal }));
    // Whatever was still under way when the save failed has ended by now.
    await new Promise((r) => setTimeout(r, 700));
    assert.deepEqual((await fs.readdir(sub)).filter((f) => f.endsWith('.usearch') || f.endsWith('.json')), []);
  });

  it('gives the same answers with its saved graphs shared with a worker thread', async () => {
    const sub = path.join(dir(), 'worker');
    const { ann, data } = fourSegments(6);
    const worker = new GraphWorker();
    try {
      const qs = Array.from({ length: 20 }, (_, i) => data.subarray(i * 151 * d, i * 151 * d + d));
      // Before a save nothing is on disk, so everything is searched here.
      for (const q of qs) assert.deepEqual(await ann.searchAsync(q, 30, worker), ann.search(q, 30));
      assert.equal(worker.searches, 0);
      await ann.save(sub, '1', 1, 'db');
      // Saved but still in memory: nothing to share yet.
      for (const q of qs.slice(0, 3)) assert.deepEqual(await ann.searchAsync(q, 30, worker), ann.search(q, 30));
      assert.equal(worker.searches, 0);
      await synced(worker);
      assert.equal(ann.viewSaved(), 4);
      ann.shareWith(worker);
      // Until the worker has read the new graphs through, searches stay here (they would queue behind that).
      assert.equal(worker.syncing, true);
      assert.deepEqual(await ann.searchAsync(qs[0], 30, worker), ann.search(qs[0], 30));
      assert.equal(worker.searches, 0);
      await synced(worker);
      ann.remove([151, 1208, 3020]); // dead in segments 1, 2 and 4: the worker's answers are filtered too
      for (const q of qs) {
        const got = await ann.searchAsync(q, 30, worker);
        assert.deepEqual(got, ann.search(q, 30));
        for (const id of [151, 1208, 3020]) assert.ok(!got.includes(id));
      }
      assert.equal(worker.searches, qs.length);
      await worker.close();
      assert.equal(worker.alive, false);
      assert.deepEqual(await ann.searchAsync(qs[0], 30, worker), ann.search(qs[0], 30), 'a dead worker is not needed');
    } finally {
      await worker.close();
    }
  });

  it("ranks rows found beside the graphs (a quantised tail's scan) with the graphs' answers for the k places, here and on the worker", async () => {
    const sub = path.join(dir(), 'beside');
    const { ann, data } = fourSegments(8);
    const tail = new QuantisedTail(d);
    const extra = randomRows(50, 9);
    for (let i = 0; i < 50; i++) tail.set(5000 + i, extra.subarray(i * d, i * d + d));
    const worker = new GraphWorker();
    try {
      await ann.save(sub, '1', 1, 'db');
      assert.equal(ann.viewSaved(), 4);
      await shared(worker, ann);
      for (let i = 0; i < 10; i++) {
        const q = extra.subarray(i * 5 * d, i * 5 * d + d);
        const here = ann.search(q, 10, undefined, tail.searchScored(q, 10));
        // The tail's row equal to the query comes first, and the k places are shared, not added to.
        assert.equal(here[0], 5000 + i * 5);
        assert.equal(here.length, 10);
        assert.deepEqual(await ann.searchAsync(q, 10, worker, undefined, false, tail.searchScored(q, 10)), here);
        // Rows farther than all the graphs' answers (opposite the query) take none of their places.
        const g = data.subarray(i * 97 * d, i * 97 * d + d);
        const opposite = new QuantisedTail(d);
        for (let j = 0; j < 5; j++) opposite.set(6000 + j, Float32Array.from(g, (x) => -x * (j + 1)));
        assert.deepEqual(ann.search(g, 10, undefined, opposite.searchScored(g, 5)), ann.search(g, 10));
      }
      assert.ok(worker.searches >= 10);
    } finally {
      await worker.close();
    }
  });

  it('leaves a table\'s lone delta graph to the worker once saved, and its changes since to a scan here while they are few', async () => {
    const sub = path.join(dir(), 'delta');
    const ann = SegmentedAnn.create(d, 'cosine');
    const data = randomRows(3000, 9);
    ann.add(Array.from({ length: 3000 }, (_, i) => i), data);
    const worker = new GraphWorker();
    const row = (id: number) => data.subarray(id * d, id * d + d);
    try {
      const qs = Array.from({ length: 10 }, (_, i) => row(i * 277));
      await shared(worker, ann);
      for (const q of qs) assert.deepEqual(await ann.searchAsync(q, 30, worker), ann.search(q, 30));
      assert.equal(worker.searches, 0, 'an unsaved delta is walked here');
      await ann.save(sub, '1', 1, 'db');
      await shared(worker, ann);
      // The worker walks the saved file: the same graph, so the same answers.
      for (const q of qs) assert.deepEqual(await ann.searchAsync(q, 30, worker), ann.search(q, 30));
      assert.equal(worker.walked, qs.length, 'every walk on the worker');
      assert.equal(ann.deltaBehind, 0);

      // Changes since the save: the worker still walks the file, and the answers are the delta's as it is now.
      const fresh = Float32Array.from(qs[0], (x) => -x);
      ann.add([5000], fresh); // new
      ann.add([277], Float32Array.from(qs[1], (x) => -x)); // row 277 (qs[1]) gets another vector
      ann.remove([554]); // qs[2]
      assert.equal(ann.deltaBehind, 4, 'two rows written since (one of them also stale in the file), one removed');
      assert.equal((await ann.searchAsync(fresh, 5, worker))[0], 5000, 'a row the file lacks');
      assert.ok(!(await ann.searchAsync(qs[1], 30, worker)).includes(277), "a row's old vector in the file is skipped");
      assert.equal((await ann.searchAsync(Float32Array.from(qs[1], (x) => -x), 5, worker))[0], 277, 'its new vector is found');
      assert.ok(!(await ann.searchAsync(qs[2], 30, worker)).includes(554), 'a removed row is skipped');
      for (const q of qs.slice(3)) assert.deepEqual(await ann.searchAsync(q, 30, worker), ann.search(q, 30));
      assert.equal(worker.walked, qs.length + 4 + qs.length - 3, 'every walk still on the worker');

      // Too many changes since: the delta is walked here again.
      const many = randomRows(4100, 12);
      ann.add(Array.from({ length: 4100 }, (_, i) => 10_000 + i), many);
      assert.equal(ann.deltaBehind, 0, 'no file shared any more');
      const walked = worker.walked;
      // Found by a graph walk (not certain to come first: see the churn test below), so among the best five.
      assert.ok((await ann.searchAsync(many.subarray(7 * d, 8 * d), 5, worker)).includes(10_007));
      assert.equal(worker.walked, walked, 'walked here');

      // Saved again, the worker walks the new file; a change during the save is tracked against that file too.
      // (Searches hold the save's hash back: once it rests for them, the file's contents are fixed.)
      const signal = new YieldSignal(10_000);
      const searching = setInterval(() => signal.searchStarted(), 2);
      const saving = ann.save(sub, '1', 2, 'db', { yieldTo: signal });
      try {
        while (signal.rests === 0) await new Promise((r) => setTimeout(r, 2));
        ann.add([6000], Float32Array.from(qs[3], (x) => -x));
      } finally {
        clearInterval(searching);
      }
      await saving;
      await shared(worker, ann);
      assert.equal(ann.deltaBehind, 1);
      assert.equal((await ann.searchAsync(fresh, 5, worker))[0], 5000);
      assert.equal((await ann.searchAsync(Float32Array.from(qs[3], (x) => -x), 5, worker))[0], 6000);
      assert.equal(worker.walked, walked + 2);
      // Reopened from its files, the delta is shared at once (without row 6000: not saved).
      const opened = await SegmentedAnn.open(sub, '1', { dimension: d, metric: 'cosine', tag: 'db' });
      assert.ok(opened);
      await shared(worker, opened.ann);
      assert.deepEqual(await opened.ann.searchAsync(qs[4], 30, worker), opened.ann.search(qs[4], 30));
      assert.equal(worker.walked, walked + 3);
    } finally {
      await worker.close();
    }
  });

  it('answers as the delta is now through random writes, rewrites, removals and saves while the worker walks its file', async () => {
    const sub = path.join(dir(), 'delta-churn');
    const r = rng(21);
    const ann = SegmentedAnn.create(d, 'cosine');
    const live = new Map<number, Float32Array>();
    const gone = new Map<number, Float32Array>();
    // Rows written since the last save: the file lacks them (or holds an old vector), so they are found only by the scan here.
    const since = new Set<number>();
    const write = (ids: number[]) => {
      const vs = randomRows(ids.length, Math.floor(r() * 1e9));
      ann.add(ids, vs);
      ids.forEach((id, i) => {
        gone.delete(id);
        since.add(id);
        live.set(id, vs.subarray(i * d, i * d + d));
      });
    };
    const pick = (n: number) => [...live.keys()].sort(() => r() - 0.5).slice(0, n);
    write(Array.from({ length: 2000 }, (_, i) => i));
    await ann.save(sub, '1', 0, 'db');
    since.clear();
    const worker = new GraphWorker();
    let nextId = 2000;
    let fromFile = 0;
    let missedInFile = 0;
    try {
      for (let step = 1; step <= 30; step++) {
        write(Array.from({ length: 20 }, () => nextId++));
        write(pick(10)); // new vectors for rows the file may hold
        const removed = pick(10);
        ann.remove(removed);
        for (const id of removed) {
          gone.set(id, live.get(id)!);
          live.delete(id);
          since.delete(id);
        }
        if (step % 7 === 0) {
          await ann.save(sub, '1', step, 'db');
          since.clear();
        }
        await shared(worker, ann);
        for (const id of [...pick(6), ...[...since].slice(-4)]) {
          const first = (await ann.searchAsync(live.get(id)!, 10, worker))[0];
          // A row written since is scanned exactly, so it must come first; one in the file is found
          // by a graph walk, which may miss now and then (usearch builds on threads: not the same graph each run).
          if (since.has(id)) assert.equal(first, id, `step ${step}: row ${id}, written since the save, by its vector`);
          else {
            fromFile++;
            if (first !== id) missedInFile++;
          }
        }
        for (const [id, v] of [...gone].slice(-5)) assert.ok(!(await ann.searchAsync(v, 10, worker)).includes(id), `step ${step}: removed row ${id}`);
      }
      assert.ok(fromFile > 100 && missedInFile <= fromFile * 0.03, `rows in the file found by their vectors: ${fromFile - missedInFile} of ${fromFile}`);
      assert.ok(worker.walked >= 30 * 15 * 0.9, `the worker walked the file for most searches: ${worker.walked}`);
    } finally {
      await worker.close();
    }
  });

  it('gives up the file of a delta emptied and saved again (the save removes it)', async () => {
    const sub = path.join(dir(), 'delta-emptied');
    const ann = SegmentedAnn.create(d, 'cosine');
    const data = randomRows(1500, 14);
    const ids = Array.from({ length: 1500 }, (_, i) => i);
    ann.add(ids, data);
    await ann.save(sub, '1', 1, 'db');
    const worker = new GraphWorker();
    try {
      await shared(worker, ann);
      const q = data.subarray(0, d);
      assert.ok((await ann.searchAsync(q, 10, worker)).includes(0));
      assert.equal(worker.walked, 1);
      ann.remove(ids);
      assert.equal(ann.deltaBehind, 1500, 'still the file, every row of it stale');
      assert.deepEqual(await ann.searchAsync(q, 10, worker), []);
      await ann.save(sub, '1', 2, 'db');
      assert.equal(ann.deltaBehind, 0);
      assert.ok(!(await fs.readdir(sub)).some((f) => f.endsWith('.delta.usearch')), 'no delta file left');
      assert.deepEqual(await ann.searchAsync(q, 10, worker), []);
      assert.equal(worker.walked, 2, 'the emptied delta is not walked there');
    } finally {
      await worker.close();
    }
  });

  it("walks an Euclidean table's delta here from its first change since the save (no common int8 scale to scan its changes at)", async () => {
    const ann = SegmentedAnn.create(d, 'euclidean');
    const data = randomRows(2000, 13);
    ann.add(Array.from({ length: 2000 }, (_, i) => i), data);
    await ann.save(path.join(dir(), 'delta-l2'), '1', 1, 'db');
    const worker = new GraphWorker();
    try {
      await shared(worker, ann);
      const q = data.subarray(5 * d, 6 * d);
      assert.deepEqual(await ann.searchAsync(q, 20, worker), ann.search(q, 20));
      assert.equal(worker.walked, 1);
      ann.add([9000], q);
      assert.ok((await ann.searchAsync(q, 20, worker)).includes(9000));
      assert.equal(worker.walked, 1, 'walked here');
    } finally {
      await worker.close();
    }
  });

  it('walks a lone graph here for a search that came alone, and leaves more graphs than one to the worker all the same', async () => {
    const lone = SegmentedAnn.create(d, 'cosine');
    const data = randomRows(3000, 10);
    lone.add(Array.from({ length: 3000 }, (_, i) => i), data);
    await lone.save(path.join(dir(), 'alone'), '1', 1, 'db');
    const four = fourSegments(11);
    await four.ann.save(path.join(dir(), 'alone-four'), '1', 1, 'db');
    four.ann.viewSaved();
    const worker = new GraphWorker();
    try {
      await shared(worker, lone, four.ann);
      const q = data.subarray(5 * d, 6 * d);
      assert.deepEqual(await lone.searchAsync(q, 30, worker, undefined, true), lone.search(q, 30));
      assert.equal(worker.searches, 0, 'alone: the lone graph walked here');
      assert.deepEqual(await lone.searchAsync(q, 30, worker), lone.search(q, 30));
      assert.equal(worker.searches, 1, 'not alone: the lone graph left to the worker');
      const q4 = four.data.subarray(7 * d, 8 * d);
      assert.deepEqual(await four.ann.searchAsync(q4, 30, worker, undefined, true), four.ann.search(q4, 30));
      assert.equal(worker.searches, 2, 'four graphs: shared with the worker, alone or not');
    } finally {
      await worker.close();
    }
  });

  it('leaves half of the shared graphs to a worker that has other searches queued', async () => {
    const sub = path.join(dir(), 'busy');
    const { ann, data } = fourSegments(8);
    await ann.save(sub, '1', 1, 'db');
    ann.viewSaved();
    const worker = new GraphWorker();
    try {
      ann.shareWith(worker);
      // Another table's graph (one of the same files, under an id of its own) to keep the worker busy.
      const file = path.join(sub, (await fs.readdir(sub)).find((f) => f.endsWith('.seg.usearch'))!);
      worker.sync({}, [{ id: 1e9, file, dimension: d, metric: 'cosine' }]);
      await synced(worker);
      const q = data.subarray(77 * d, 78 * d);
      const busy = worker.search(Array(200).fill(1e9), q, 100, newGraphClaims());
      const got = ann.searchAsync(q, 30, worker);
      await busy;
      const before = worker.walked;
      assert.deepEqual(await got, ann.search(q, 30));
      assert.equal(worker.walked - before, 2, 'the worker walked the two graphs left to it');
    } finally {
      await worker.close();
    }
  });
});

describe('search effort (ef)', () => {
  it('widens each walk: recall@10 on hard (uniform 48-d) rows grows from ef 10 to ef 400, and the default reaches 0.95', () => {
    const dim = 48;
    const n = 10_000;
    const r = rng(77);
    const data = Float32Array.from({ length: n * dim }, () => r() - 0.5);
    const ann = SegmentedAnn.create(dim, 'cosine');
    ann.add(Array.from({ length: n }, (_, i) => i), data);
    const cos = (q: Float32Array, i: number) => {
      let dot = 0, a = 0, b = 0;
      for (let j = 0; j < dim; j++) { const v = data[i * dim + j]; dot += q[j] * v; a += q[j] * q[j]; b += v * v; }
      return dot / Math.sqrt(a * b);
    };
    const queries = Array.from({ length: 40 }, () => Float32Array.from({ length: dim }, () => r() - 0.5));
    const truths = queries.map((q) => new Set(Array.from({ length: n }, (_, i) => [i, cos(q, i)] as const).sort((x, y) => y[1] - x[1]).slice(0, 10).map(([i]) => i)));
    const recall = (ef: number | undefined) => {
      let hit = 0;
      queries.forEach((q, i) => (hit += ann.search(q, 10, ef).filter((id) => truths[i].has(id)).length));
      return hit / (queries.length * 10);
    };
    const low = recall(10);
    const high = recall(400);
    const byDefault = recall(undefined);
    assert.ok(high > low + 0.05, `ef 10: ${low}, ef 400: ${high}`);
    assert.ok(high >= 0.95 && byDefault >= 0.95, `ef 400: ${high}, default: ${byDefault}`);
  });
});
