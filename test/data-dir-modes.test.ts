import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { startServer } from './server.ts';

/** Every entry under `dir` (itself included) with its permission bits, symlinks not followed. */
function modes(dir: string): Map<string, { dir: boolean; mode: number }> {
  const out = new Map<string, { dir: boolean; mode: number }>();
  const walk = (p: string) => {
    const st = fs.lstatSync(p, { throwIfNoEntry: false });
    if (st === undefined) return; // a temp file renamed or removed meanwhile
    out.set(path.relative(dir, p) || '.', { dir: st.isDirectory(), mode: st.mode & 0o777 });
    // A folder removed meanwhile too (the search warm-up's, once it is done).
    if (st.isDirectory()) for (const name of readdirIfThere(p)) walk(path.join(p, name));
  };
  walk(dir);
  return out;
}

function readdirIfThere(p: string): string[] {
  try {
    return fs.readdirSync(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
}

function assertPrivate(dir: string, when: string): void {
  const loose = [...modes(dir)].filter(([, e]) => e.mode !== (e.dir ? 0o700 : 0o600)).map(([p, e]) => `${p} ${e.mode.toString(8)}`);
  assert.deepEqual(loose, [], `${when}: entries not 0700/0600`);
}

describe('the data directory is private (real server process)', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'vss-modes-'));
  const dataDir = path.join(root, 'data');
  after(() => fs.rmSync(root, { recursive: true, force: true }));
  // Small segments saved often, so that a short run writes every kind of file the store keeps.
  const env = { VSS_DATA_DIR: dataDir, VSS_EXACT_BELOW_ROWS: '0', VSS_INDEX_SEGMENT_ROWS: '1000', VSS_INDEX_SAVE_EVERY_CHANGES: '100', VSS_INDEX_SAVE_EVERY_MS: '100', VSS_LOG_LEVEL: 'info' };

  it('creates its directories 0700 and files 0600 (database, WAL, vectors, graphs, stored files, admin.key), and a start tightens looser ones, saying so', async () => {
    let server = await startServer(env, 120_000);
    try {
      const key = fs.readFileSync(path.join(dataDir, 'admin.key'), 'utf8').trim();
      const vectors = Array.from({ length: 1100 }, (_, i) => ({ key: `v${i}`, vector: Array.from({ length: 8 }, (_, d) => Math.sin(i * 7 + d)) }));
      for (let i = 0; i < vectors.length; i += 550) {
        const res = await server.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table: 'modes', vectors: vectors.slice(i, i + 550) }, key);
        assert.equal(res.status, 200, JSON.stringify(res.body));
      }
      const form = new FormData();
      form.append('keyspace', 'default_keyspace');
      form.append('file', new Blob(['A lighthouse keeper writes down the weather every evening.']), 'notes.txt');
      const up = await fetch(`${server.url}/v1/embed/`, { method: 'POST', headers: { 'x-api-key': key }, body: form });
      assert.equal(up.status, 200, await up.text());

      const deadline = Date.now() + 60_000;
      const kinds = () => [...modes(dataDir).keys()];
      // The table's own sealed segment: the search warm-up's (under warm-up/) is often written first.
      const segment = /^indexes\/.*\.seg\.usearch$/;
      while (!kinds().some((p) => segment.test(p)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const seen = kinds();
      for (const expected of [/^vss\.db$/, /^vss\.db-wal$/, /^vss\.db-shm$/, /^admin\.key$/, /^vectors\/\d+\.f32$/, segment, /^indexes\/.*\.json$/, /^files\/./]) {
        assert.ok(seen.some((p) => expected.test(p)), `${expected} among ${seen.join(', ')}`);
      }
      assertPrivate(dataDir, 'while running');
    } finally {
      await server.kill('SIGTERM');
    }
    assertPrivate(dataDir, 'after a clean stop');

    // As an older version (or a copy with a default umask) left it.
    const before = modes(dataDir);
    for (const [p, e] of before) fs.chmodSync(path.join(dataDir, p), e.dir ? 0o755 : 0o644);
    const dirs = [...before.values()].filter((e) => e.dir).length;
    const files = before.size - dirs;
    server = await startServer(env, 120_000);
    try {
      assertPrivate(dataDir, 'after a start on loose modes');
      const line = server
        .output()
        .split('\n')
        .find((l) => l.includes('took group and other access off'));
      assert.ok(line, server.output());
      assert.match(line, new RegExp(`off ${files} file\\(s\\) and ${dirs} directories`));
    } finally {
      await server.kill('SIGTERM');
    }
  });
});
