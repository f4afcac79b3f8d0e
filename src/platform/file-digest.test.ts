import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { copyFileDigested, digestFile, digestFiles } from './file-digest.ts';
import { YieldSignal } from './yield-signal.ts';
import { tempDirForSuite } from './temp-dir-test-support.ts';

describe('file digests', () => {
  const dir = tempDirForSuite('vss-digest-');

  // Over two 8 MiB blocks and not a multiple of one, so the last block is short.
  const data = randomBytes((17 << 20) + 12_345);
  const sha256 = createHash('sha256').update(data).digest('hex');

  it('digests files and names the ones it cannot read', async () => {
    const file = path.join(dir(), 'a.bin');
    await fs.writeFile(file, data);
    const [ok, missing] = await digestFiles([file, path.join(dir(), 'missing.bin')]);
    assert.deepEqual(ok, { bytes: data.length, sha256 });
    assert.ok(missing instanceof Error);
    assert.equal((missing as NodeJS.ErrnoException).code, 'ENOENT');
  });

  it('copies a file in blocks and returns the digest of what it wrote', async () => {
    const from = path.join(dir(), 'from.bin');
    const to = path.join(dir(), 'to.bin');
    await fs.writeFile(from, data);
    assert.deepEqual(await copyFileDigested(from, to), { bytes: data.length, sha256 });
    assert.ok((await fs.readFile(to)).equals(data));
    assert.deepEqual(await digestFile(to), { bytes: data.length, sha256 });
  });

  it('copies and digests with rests while searches move the signal, the same bytes', async () => {
    const from = path.join(dir(), 'busy-from.bin');
    await fs.writeFile(from, data);
    // No patience: one rest per block whatever the searches do (the next test waits for gaps).
    const signal = new YieldSignal(0);
    assert.deepEqual(await copyFileDigested(from, path.join(dir(), 'idle.bin'), { yieldTo: signal, restMs: 5 }), { bytes: data.length, sha256 });
    assert.equal(signal.rests, 0, 'no search, so no rest');
    // A "search" every 2 ms: the copy sees the count moved before every block (and rests 5 ms).
    const searching = setInterval(() => signal.searchStarted(), 2);
    const to = path.join(dir(), 'busy.bin');
    const copied = await copyFileDigested(from, to, { yieldTo: signal, restMs: 5 }).finally(() => clearInterval(searching));
    assert.deepEqual(copied, { bytes: data.length, sha256 });
    assert.ok((await fs.readFile(to)).equals(data));
    // 17 MiB in 2 MiB blocks once the count moved: more rests than 8 MiB blocks could give.
    assert.ok(signal.rests >= 4, `rests: ${signal.rests}`);
    // A search between the call and the thread's start counts too: the one block of a small file rests.
    const small = path.join(dir(), 'small.bin');
    await fs.writeFile(small, data.subarray(0, 1000));
    const before = signal.rests;
    const digesting = digestFile(small, { yieldTo: signal });
    signal.searchStarted();
    assert.equal((await digesting).bytes, 1000);
    assert.equal(signal.rests, before + 1);
  });

  it('waits for a gap in the searches before each block, for as long as its patience lasts', async () => {
    const from = path.join(dir(), 'gap-from.bin');
    await fs.writeFile(from, data);
    // Searches every 2 ms until the copy has rested 20 times for them (its thread may take a while
    // to start), then none: the copy writes nothing until they stop.
    const patient = new YieldSignal(10_000);
    const t0 = Date.now();
    let stoppedAt = Infinity;
    const searching = setInterval(() => {
      if (patient.rests < 20 && Date.now() - t0 < 8_000) return patient.searchStarted();
      clearInterval(searching);
      stoppedAt = Date.now();
    }, 2);
    patient.searchStarted();
    const to = path.join(dir(), 'gap.bin');
    assert.deepEqual(await copyFileDigested(from, to, { yieldTo: patient, restMs: 5 }), { bytes: data.length, sha256 });
    assert.ok(Date.now() >= stoppedAt, `done ${Date.now() - t0} ms after the call, the searches ran for ${stoppedAt - t0} ms`);
    assert.ok((await fs.readFile(to)).equals(data));
    assert.ok(patient.rests >= 20, `rests: ${patient.rests}`);
    // Searches that never stop: past its patience the copy goes on between them, one rest a block.
    const brief = new YieldSignal(200);
    const endless = setInterval(() => brief.searchStarted(), 2);
    brief.searchStarted();
    const t1 = Date.now();
    const copied = await copyFileDigested(from, path.join(dir(), 'gap-endless.bin'), { yieldTo: brief, restMs: 5 }).finally(() => clearInterval(endless));
    assert.deepEqual(copied, { bytes: data.length, sha256 });
    assert.ok(Date.now() - t1 >= 200, 'not before its patience ran out');
  });

  it('never copies over an existing file', async () => {
    const from = path.join(dir(), 'src.bin');
    const to = path.join(dir(), 'taken.bin');
    await fs.writeFile(from, data.subarray(0, 1000));
    await fs.writeFile(to, 'keep me');
    await assert.rejects(copyFileDigested(from, to), { code: 'EEXIST' });
    assert.equal(await fs.readFile(to, 'utf8'), 'keep me');
  });
});
