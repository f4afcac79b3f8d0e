import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestApp, type TestApp } from './testing.ts';
import { SearchWarmUp } from './warm-up.ts';

describe('search warm-up (fake model: it embeds nothing)', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ model: 'fake' });
  });
  after(() => t?.close());

  const warmUpDir = () => path.join(t.dataDir, 'warm-up');
  const realState = async () => ({ keyspaces: await t.deps.storage.listKeyspaces(), keys: await t.deps.storage.countApiKeys() });

  it('searches graphs of its own through an app of its own, then removes all of it', async () => {
    const before = await realState();
    await mkdir(path.join(warmUpDir(), 'left-by-a-killed-process'), { recursive: true });
    await writeFile(path.join(warmUpDir(), 'left-by-a-killed-process', 'x'), 'x');
    const w = new SearchWarmUp(t.deps, { searches: 300, activity: () => 0 });
    await w.start();
    // Every search was answered, and each walked the graph its rows made (none a scan); after the
    // 256th, beside rows written since (the tail).
    assert.deepEqual(w.progress, { searches: 300, graphSearches: 300, rows: 7_200 });
    assert.ok(!existsSync(warmUpDir()), 'its folder is gone');
    assert.deepEqual(await realState(), before, 'the real store gained no keyspace, table or key');
    const list = await t.call('GET', '/v1/keyspaces/list');
    assert.ok(!JSON.stringify(list.json()).includes('warm_up'), list.body);
  });

  it('rests while the real server has requests, and runs once they stop', async () => {
    let requests = 0;
    const coming = setInterval(() => requests++, 20);
    const w = new SearchWarmUp(t.deps, { searches: 40, activity: () => requests });
    const done = w.start();
    try {
      await sleep(500);
      assert.equal(w.progress.searches, 0);
      assert.ok(!existsSync(warmUpDir()), 'nothing opened while requests come');
    } finally {
      clearInterval(coming);
    }
    await done;
    assert.equal(w.progress.searches, 40);
  });

  it('stops between turns when closed, and leaves nothing behind', async () => {
    const w = new SearchWarmUp(t.deps, { searches: 100_000, activity: () => 0 });
    void w.start();
    while (w.progress.searches === 0) await sleep(5);
    await w.close();
    assert.ok(w.progress.searches < 100_000, `stopped after ${w.progress.searches}`);
    assert.ok(!existsSync(warmUpDir()));
  });

  it('sends none when asked for none, and says why when it fails', async () => {
    const none = new SearchWarmUp(t.deps, { searches: 0, activity: () => 0 });
    await none.start();
    assert.equal(none.progress.searches, 0);
    assert.ok(!existsSync(warmUpDir()));

    // A file where its folder goes: the store cannot open there.
    const logged: string[] = [];
    const blocked = { ...t.deps, config: { ...t.deps.config, dataDir: path.join(t.dataDir, 'a-file') } };
    await writeFile(blocked.config.dataDir, 'not a folder');
    const failing = new SearchWarmUp(blocked, { searches: 10, activity: () => 0, log: (msg) => logged.push(msg) });
    await failing.start();
    assert.deepEqual(logged, ['search warm-up failed; searches warm up as they come']);
  });
});
