import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { copyFileDigested, digestFile, digestFiles } from './file-digest.ts';

describe('file digests', () => {
  let dir: string;
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-digest-'));
  });
  after(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  // Over two 8 MiB blocks and not a multiple of one, so the last block is short.
  const data = randomBytes((17 << 20) + 12_345);
  const sha256 = createHash('sha256').update(data).digest('hex');

  it('digests files and names the ones it cannot read', async () => {
    const file = path.join(dir, 'a.bin');
    await fs.writeFile(file, data);
    const [ok, missing] = await digestFiles([file, path.join(dir, 'missing.bin')]);
    assert.deepEqual(ok, { bytes: data.length, sha256 });
    assert.ok(missing instanceof Error);
    assert.equal((missing as NodeJS.ErrnoException).code, 'ENOENT');
  });

  it('copies a file in blocks and returns the digest of what it wrote', async () => {
    const from = path.join(dir, 'from.bin');
    const to = path.join(dir, 'to.bin');
    await fs.writeFile(from, data);
    assert.deepEqual(await copyFileDigested(from, to), { bytes: data.length, sha256 });
    assert.ok((await fs.readFile(to)).equals(data));
    assert.deepEqual(await digestFile(to), { bytes: data.length, sha256 });
  });

  it('never copies over an existing file', async () => {
    const from = path.join(dir, 'src.bin');
    const to = path.join(dir, 'taken.bin');
    await fs.writeFile(from, data.subarray(0, 1000));
    await fs.writeFile(to, 'keep me');
    await assert.rejects(copyFileDigested(from, to), { code: 'EEXIST' });
    assert.equal(await fs.readFile(to, 'utf8'), 'keep me');
  });
});
