import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { describeTightened, makePrivateDir } from './private-dir.ts';

const mode = (p: string): number => fs.lstatSync(p).mode & 0o777;

describe('makePrivateDir', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'vss-private-'));
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('creates a missing directory 0700', async () => {
    const dir = path.join(root, 'fresh', 'data');
    assert.deepEqual(await makePrivateDir(dir), { files: 0, dirs: 0 });
    assert.equal(mode(dir), 0o700);
  });

  it('takes group and other access off every directory and file under it, and says how many', async () => {
    const dir = path.join(root, 'loose');
    fs.mkdirSync(path.join(dir, 'vectors'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'files'), { mode: 0o700 });
    fs.writeFileSync(path.join(dir, 'vss.db'), 'x');
    fs.writeFileSync(path.join(dir, 'vectors', '1.f32'), 'x');
    fs.writeFileSync(path.join(dir, 'files', 'kept'), 'x', { mode: 0o600 });
    fs.writeFileSync(path.join(dir, 'tool.sh'), 'x');
    fs.writeFileSync(path.join(dir, 'read-only'), 'x');
    const outside = path.join(root, 'outside');
    fs.writeFileSync(outside, 'x');
    fs.symlinkSync(outside, path.join(dir, 'link'));
    for (const [p, m] of [[dir, 0o755], [path.join(dir, 'vectors'), 0o775], [path.join(dir, 'vss.db'), 0o644], [path.join(dir, 'vectors', '1.f32'), 0o666], [path.join(dir, 'tool.sh'), 0o755], [path.join(dir, 'read-only'), 0o400], [outside, 0o644]] as const) {
      fs.chmodSync(p, m);
    }

    const t = await makePrivateDir(dir);
    assert.deepEqual(t, { files: 3, dirs: 2 });
    assert.equal(mode(dir), 0o700);
    assert.equal(mode(path.join(dir, 'vectors')), 0o700);
    assert.equal(mode(path.join(dir, 'files')), 0o700);
    assert.equal(mode(path.join(dir, 'vss.db')), 0o600);
    assert.equal(mode(path.join(dir, 'vectors', '1.f32')), 0o600);
    assert.equal(mode(path.join(dir, 'files', 'kept')), 0o600);
    assert.equal(mode(path.join(dir, 'tool.sh')), 0o600);
    assert.equal(mode(path.join(dir, 'read-only')), 0o400, 'tighter than 0600 stays as it is');
    assert.equal(mode(outside), 0o644, 'a link is not followed');
    assert.match(describeTightened(dir, t)!, /3 file\(s\) and 2 directories/);

    assert.deepEqual(await makePrivateDir(dir), { files: 0, dirs: 0 }, 'nothing left to tighten');
    assert.equal(describeTightened(dir, { files: 0, dirs: 0 }), null);
  });
});
