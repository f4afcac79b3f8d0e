import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SegmentedMatrix, type VectorBlock } from '../../index/matrix.ts';
import { tempDirForSuite } from '../../platform/temp-dir-test-support.ts';
import { DEFAULT_LEXICAL } from '../api.ts';
import { IndexKeeper, TableState, type TableMeta, type UpkeepOptions } from './index-upkeep.ts';

const DIM = 8;

/**
 * A matrix whose gather() (what an indexing slice reads rows through) throws while `failing()`
 * says so, and takes `msPerRow` a row (as inserts into a big graph do: a slice's rows are sized by it).
 */
class FlakyMatrix extends SegmentedMatrix {
  gathers = 0;
  constructor(
    readonly failing: (attempt: number) => boolean,
    readonly msPerRow = 0,
  ) {
    super(DIM);
  }
  override *gather(rowIds: Iterable<number>, blockRows?: number): IterableIterator<VectorBlock> {
    if (this.failing(++this.gathers)) throw new Error('disk went away');
    const ids = [...rowIds];
    for (const until = performance.now() + ids.length * this.msPerRow; performance.now() < until; );
    yield* super.gather(ids, blockRows);
  }
}

function setUp(dir: string, matrix: FlakyMatrix, rows = 200, ackRows?: number, tailRestMs?: number, more: Partial<UpkeepOptions> = {}) {
  const meta: TableMeta = { id: 1, keyspace: 'ks', name: 't', dimension: DIM, metric: 'cosine', model: null, lexical: DEFAULT_LEXICAL, createdAt: '' };
  const t = new TableState(meta, matrix);
  const logged: string[] = [];
  const keeper = new IndexKeeper(
    { dir, saveEveryChanges: 1e9, saveEveryMs: 3.6e6, exactBelowRows: 0, segmentRows: 10_000, tag: 'test', ackRows, tailRestMs, log: (m) => logged.push(m), ...more },
    { rowsSince: () => [], currentSeq: () => 1 },
  );
  keeper.add(t);
  const ids = Array.from({ length: rows }, (_, i) => i + 1);
  putRows(matrix, ids);
  return { t, keeper, ids, logged };
}

function putRows(matrix: SegmentedMatrix, ids: number[]): void {
  matrix.setMany(
    ids,
    ids.map((id) => Float32Array.from({ length: DIM }, (_, d) => Math.sin(id * DIM + d))),
  );
}

describe('index upkeep after a failed slice', () => {
  const dir = tempDirForSuite('vss-upkeep-');

  it('indexes the waiting rows again without another write coming', async () => {
    const matrix = new FlakyMatrix((attempt) => attempt <= 2);
    const { t, keeper, ids, logged } = setUp(dir(), matrix);
    keeper.start();
    keeper.upserted(t, ids, 1);
    // No write follows: only the upkeep's own retry can take the rows into the graphs.
    await Promise.race([keeper.whenIndexed(), new Promise((_, reject) => setTimeout(() => reject(new Error('never indexed')), 20_000))]);
    assert.equal(t.pendingCount, 0);
    assert.equal(t.ann?.size, ids.length);
    assert.equal(logged.filter((m) => m === 'ANN indexing failed').length, 2);
    await keeper.close();
  });

  it('backs off while the failure lasts instead of spinning', async () => {
    const matrix = new FlakyMatrix(() => true);
    const { t, keeper, ids } = setUp(dir(), matrix);
    keeper.start();
    keeper.upserted(t, ids, 1);
    await new Promise((r) => setTimeout(r, 1_600));
    await keeper.close();
    // 100, 200, 400, 800 ms apart: five attempts in 1.6 s at most; a retry at once would make thousands.
    assert.ok(matrix.gathers >= 2, `retried: ${matrix.gathers} attempts`);
    assert.ok(matrix.gathers <= 5, `backed off: ${matrix.gathers} attempts`);
    assert.equal(t.pendingCount, ids.length);
  });
});

describe('index upkeep acknowledging writes', () => {
  const dir = tempDirForSuite('vss-upkeep-ack-');

  it('lets a bulk write go once its table has at most ackRows rows waiting for the graphs', async () => {
    const { t, keeper, ids } = setUp(dir(), new FlakyMatrix(() => false), 3_000, 500);
    keeper.start();
    keeper.upserted(t, ids, 1);
    assert.equal(t.pendingCount, 3_000);
    await keeper.caughtUp(t);
    assert.ok(t.pendingCount <= 500, `${t.pendingCount} rows still waiting`);
    assert.ok((t.ann?.size ?? 0) >= 2_500);
    await keeper.close();
  });

  it('lets a small write go at once', async () => {
    const { t, keeper, ids } = setUp(dir(), new FlakyMatrix(() => false), 400, 500);
    keeper.upserted(t, ids, 1);
    let done = false;
    void keeper.caughtUp(t).then(() => (done = true));
    await Promise.resolve();
    assert.ok(done);
    assert.equal(t.pendingCount, 400);
    await keeper.close();
  });
});

describe('index upkeep while searches come', () => {
  const dir = tempDirForSuite('vss-upkeep-rest-');
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** Marks a search every 20 ms for `ms`. */
  async function searchFor(keeper: IndexKeeper, ms: number): Promise<void> {
    const until = performance.now() + ms;
    while (performance.now() < until) {
      keeper.searched();
      await sleep(20);
    }
  }
  const indexed = (keeper: IndexKeeper) => Promise.race([keeper.whenIndexed(), sleep(10_000).then(() => Promise.reject(new Error('never indexed')))]);

  it('leaves a tail of at most ackRows rows to its scan while searches keep coming, and indexes it once they pause', async () => {
    const { t, keeper, ids } = setUp(dir(), new FlakyMatrix(() => false), 300, 500);
    keeper.start();
    keeper.upserted(t, ids, 1);
    await searchFor(keeper, 600);
    assert.equal(t.pendingCount, 300);
    assert.equal(t.tail?.size, 300);
    await indexed(keeper);
    assert.equal(t.ann?.size, 300);
    await keeper.close();
  });

  it('leaves the rows a bulk write left to their tail once it is let go, for the search that comes next', async () => {
    // At 0.2 ms a row, the write waits ~0.6 s for the graphs: longer than the busy window its commit
    // opened. And a slice (60 ms while a write waits) takes at most ~300 rows, so some are left.
    const { t, keeper, ids } = setUp(dir(), new FlakyMatrix(() => false, 0.2), 3_000, 500);
    keeper.start();
    keeper.upserted(t, ids, 1);
    await keeper.caughtUp(t);
    const left = t.pendingCount;
    assert.ok(left > 0 && left <= 500, `${left} rows left`);
    // The client's next request (a search, after a bulk load) must not wait behind their inserts.
    await sleep(50);
    assert.equal(t.pendingCount, left);
    await indexed(keeper);
    assert.equal(t.ann?.size, 3_000);
    await keeper.close();
  });

  it('indexes a resting tail once tailRestMs has passed, searches or not', async () => {
    const { t, keeper, ids } = setUp(dir(), new FlakyMatrix(() => false), 300, 500, 300);
    keeper.start();
    keeper.upserted(t, ids, 1);
    await searchFor(keeper, 1_500);
    assert.equal(t.pendingCount, 0);
    await keeper.close();
  });

  it('puts off a save that changes ask for while searches come, to a quiet moment', async () => {
    const { t, keeper, ids } = setUp(dir(), new FlakyMatrix(() => false), 300, 500, 0, { saveEveryChanges: 200 });
    keeper.start();
    keeper.upserted(t, ids, 1);
    await indexed(keeper);
    await t.saving; // with no search coming, saved at once
    const next = Array.from({ length: 300 }, (_, i) => ids.length + i + 1);
    putRows(t.matrix as SegmentedMatrix, next);
    keeper.upserted(t, next, 2);
    await searchFor(keeper, 1_000);
    assert.equal(t.pendingCount, 0);
    assert.ok(t.changes >= 300, `saved while searches came: ${t.changes} changes unsaved`);
    // Saved once no search came for settleQuietMs (1 s), well before the deadline (5 s after the put-off).
    const stopped = performance.now();
    while (t.changes > 0 && performance.now() - stopped < 3_000) await sleep(50);
    assert.equal(t.changes, 0);
    await keeper.close();
  });

  it('indexes a tail past ackRows while searches come, down to ackRows', async () => {
    const { t, keeper, ids } = setUp(dir(), new FlakyMatrix(() => false), 1_200, 500);
    keeper.start();
    keeper.upserted(t, ids, 1);
    await searchFor(keeper, 3_000);
    assert.ok(t.pendingCount <= 500 && t.pendingCount > 0, `${t.pendingCount} rows waiting`);
    await indexed(keeper);
    await keeper.close();
  });
});
