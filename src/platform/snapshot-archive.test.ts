import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ArchiveError, extractArchive, readManifest, writeArchive } from './snapshot-archive.ts';
import { tempDirForSuite } from './temp-dir-test-support.ts';

/** An archive made by hand, well formed (length, digest) whatever its manifest says. */
function handMade(manifest: unknown, members: Buffer[]): Buffer {
  const json = Buffer.from(JSON.stringify(manifest));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  const body = Buffer.concat([Buffer.from('VSSSNAP\n', 'latin1'), length, json, ...members]);
  return Buffer.concat([body, createHash('sha256').update(body).digest()]);
}

const member = (name: string, content: Buffer) => ({ name, size: content.length, sha256: createHash('sha256').update(content).digest('hex') });
const manifestOf = (members: ReturnType<typeof member>[], version = 1) => ({ format: 'vss-snapshot', version, created_at: '2026-11-25T00:00:00.000Z', storage: 'embedded', rows: { total: 0, tables: [] }, members });

describe('snapshot archive', () => {
  const dir = tempDirForSuite('vss-archive-');

  it('writes members and reads them back exactly, empty ones included, private modes', async () => {
    const src = path.join(dir(), 'src');
    await fs.mkdir(path.join(src, 'files'), { recursive: true });
    await fs.writeFile(path.join(src, 'vss.db'), Buffer.alloc(3 * 2 ** 20 + 7, 7));
    await fs.writeFile(path.join(src, 'files', 'a'), '');
    await fs.writeFile(path.join(src, 'files', 'b'), 'bee');
    const archive = path.join(dir(), 'one.vss');
    const written = await writeArchive(archive, src, ['vss.db', 'files/a', 'files/b'], { created_at: 'now', storage: 'embedded', rows: { total: 0, tables: [] } });
    assert.equal((await fs.stat(archive)).mode & 0o777, 0o600);
    assert.deepEqual(await readManifest(archive), written);
    const out = path.join(dir(), 'out');
    await extractArchive(archive, out);
    assert.equal((await fs.stat(out)).mode & 0o777, 0o700);
    assert.deepEqual(await fs.readFile(path.join(out, 'vss.db')), await fs.readFile(path.join(src, 'vss.db')));
    assert.equal(await fs.readFile(path.join(out, 'files', 'a'), 'utf8'), '');
    assert.equal(await fs.readFile(path.join(out, 'files', 'b'), 'utf8'), 'bee');
    assert.equal((await fs.stat(path.join(out, 'files', 'b'))).mode & 0o777, 0o600);
    await assert.rejects(extractArchive(archive, out), (e: Error) => e instanceof ArchiveError && /already exists/.test(e.message), 'never over an existing directory');
  });

  it('refuses member paths that leave the directory, and other versions, though their checksums are right', async () => {
    const evil = Buffer.from('owned');
    for (const [what, manifest, match] of [
      ['a parent path', manifestOf([member('../evil', evil)]), /bad member name/],
      ['an absolute path', manifestOf([member('/tmp/evil', evil)]), /bad member name/],
      ['a dot segment', manifestOf([member('files/../../evil', evil)]), /bad member name/],
      ['another format version', manifestOf([member('vss.db', evil)], 2), /version 2/],
    ] as const) {
      const archive = path.join(dir(), 'evil.vss');
      await fs.writeFile(archive, handMade(manifest, [evil]));
      const target = path.join(dir(), 'evil-out', 'data');
      await assert.rejects(extractArchive(archive, target), (e: Error) => e instanceof ArchiveError && match.test(e.message), what);
      await assert.rejects(fs.access(path.join(dir(), 'evil')), what);
      await assert.rejects(fs.access(target), what);
    }
    // The same bytes under a plain name are accepted: the refusals above are for the names.
    await fs.writeFile(path.join(dir(), 'fine.vss'), handMade(manifestOf([member('fine', evil)]), [evil]));
    await extractArchive(path.join(dir(), 'fine.vss'), path.join(dir(), 'fine-out'));
    assert.equal(await fs.readFile(path.join(dir(), 'fine-out', 'fine'), 'utf8'), 'owned');
  });
});
