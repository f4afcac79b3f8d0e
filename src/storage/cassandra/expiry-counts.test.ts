import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cellsOf, countPlan, DAY, expiryBucket, MINUTE, PERIOD } from './expiry-counts.ts';

/** A seeded generator, so a failure can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('expiry buckets of the row counts', () => {
  it('puts a row in a bucket no earlier than the engine expires it, and in the cells of that bucket', () => {
    const r = rng(7);
    for (let i = 0; i < 20_000; i++) {
      const nowMs = 1.7e12 + Math.floor(r() * 1e11);
      const ttl = 1 + Math.floor(r() ** 3 * 630_720_000);
      const f = expiryBucket(nowMs, ttl);
      // The engine's expiry: its second of the write (this second or the next) plus the TTL.
      assert.ok(f >= Math.floor(nowMs / 1000) + 1 + ttl, `bucket ${f} before the expiry (now ${nowMs}, ttl ${ttl})`);
      assert.ok(f - MINUTE < Math.floor(nowMs / 1000) + 1 + ttl, 'the bucket is the minute of the expiry');
      const cells = cellsOf(f);
      assert.deepEqual(cells.map(([w]) => w), [MINUTE, DAY, PERIOD]);
      for (const [w, b] of cells) assert.ok(b % w === 0 && b >= f && b - w < f, `cell ${w}:${b} of bucket ${f}`);
    }
  });

  it('counts every row once at any moment: by the engine up to the window, by exactly one counter range after it', () => {
    const r = rng(11);
    for (let i = 0; i < 20_000; i++) {
      const writtenMs = 1.7e12 + Math.floor(r() * 1e11);
      const ttl = 1 + Math.floor(r() ** 3 * 630_720_000);
      const f = expiryBucket(writtenMs, ttl);
      // A count at any moment from the write until long after the expiry.
      const nowMs = writtenMs + Math.floor(r() * (ttl + 7_200) * 1000);
      const now = Math.floor(nowMs / 1000);
      const plan = countPlan(nowMs);
      const byEngine = f > plan.low && f <= plan.window;
      const cells = new Map(cellsOf(f));
      const byCounters = plan.ranges.filter(([w, after, upTo]) => cells.get(w)! > after && cells.get(w)! <= upTo).length;
      if (f <= plan.window) {
        assert.equal(byCounters, 0, `bucket ${f} at ${now}: no counter range may count a row the engine counts`);
        // Rows left to neither have expired an hour ago or more.
        if (!byEngine) assert.ok(f <= now - 3_600);
      } else {
        assert.equal(byCounters, 1, `bucket ${f} at ${now}: counted by ${byCounters} counter ranges`);
        // A counter only counts rows whose expiry is at least a minute ahead (clocks may differ by that).
        assert.ok(f - MINUTE - 1 > now + MINUTE, `bucket ${f} counted by a counter at ${now}, too close to its expiry`);
      }
    }
  });

  it('reads a bounded number of counter cells', () => {
    const plan = countPlan(Date.now());
    const [[, mAfter, mUpTo], [, dAfter, dUpTo]] = plan.ranges;
    assert.ok((mUpTo - mAfter) / MINUTE <= DAY / MINUTE);
    assert.ok((dUpTo - dAfter) / DAY <= PERIOD / DAY);
    assert.ok(plan.window - Math.floor(Date.now() / 1000) <= 3 * MINUTE, 'the engine counts at most three minutes of expiries ahead');
  });
});
