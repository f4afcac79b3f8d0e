import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startServer } from './server.ts';

const ADMIN = 'durability-admin-key-0123456789';

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

/** Clustered vectors, as real embeddings are: ANN recall on them is meaningful. */
function clustered(n: number, dim: number, seed: number): number[][] {
  const r = rng(seed);
  const centres = Array.from({ length: 20 }, () => Array.from({ length: dim }, r));
  return Array.from({ length: n }, (_, i) => centres[i % 20].map((c) => c + r() * 0.3));
}

describe('durability (real server process)', () => {
  let dataDir: string;
  before(async () => (dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-durability-'))));
  after(() => rm(dataDir, { recursive: true, force: true }));

  it('keeps every acknowledged write through kill -9', async () => {
    const env = { VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: ADMIN };
    let server = await startServer(env);
    const dim = 64;
    const vectors = clustered(1000, dim, 1);
    const acknowledged: string[] = [];
    // Concurrent batches and single writes, the last acknowledged right before the kill.
    await Promise.all(
      Array.from({ length: 10 }, async (_, b) => {
        const batch = vectors.slice(b * 90, b * 90 + 90).map((vector, i) => ({ key: `b${b}-${i}`, vector, metadata: { b } }));
        const res = await server.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table: 'durable', vectors: batch });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        acknowledged.push(...res.body.keys);
      }),
    );
    for (let i = 900; i < 1000; i++) {
      const res = await server.call('POST', '/v1/vector/write', { keyspace: 'default_keyspace', table: 'durable', key: `s${i}`, vector: vectors[i] });
      assert.equal(res.status, 200);
      acknowledged.push(res.body.key);
    }
    await server.kill('SIGKILL');

    server = await startServer(env);
    try {
      const count = await server.call('POST', '/v1/vector/count', { keyspace: 'default_keyspace', table: 'durable' });
      assert.equal(count.body.count, acknowledged.length);
      for (const key of acknowledged) {
        const got = await server.call('POST', '/v1/vector/get', { keyspace: 'default_keyspace', table: 'durable', key, include_vector: false });
        assert.equal(got.status, 200, key);
      }
      // And search sees them all, by exact scan.
      const s = await server.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table: 'durable', vector: vectors[999], final_top_k: 1 });
      assert.equal(s.body.matches[0].key, 's999');
    } finally {
      await server.kill('SIGKILL');
    }
  });

  it('answers identically after the saved ANN index is deleted or corrupted', async () => {
    // ANN path on from the first row; save often so an index file exists.
    const env = { VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: ADMIN, VSS_EXACT_BELOW_ROWS: '0', VSS_INDEX_SAVE_EVERY_CHANGES: '500' };
    let server = await startServer(env);
    const dim = 48;
    const vectors = clustered(3000, dim, 2);
    for (let b = 0; b < 3; b++) {
      const batch = vectors.slice(b * 1000, b * 1000 + 1000).map((vector, i) => ({ key: `r${b * 1000 + i}`, vector }));
      const res = await server.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table: 'rebuild', vectors: batch });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    const queries = clustered(8, dim, 3);
    const ask = async () => {
      const out: unknown[] = [];
      for (const q of queries) {
        // Exact (default initial_top_k) and ANN (initial_top_k 300 < 3000 rows) paths.
        for (const initial of [undefined, 300]) {
          const res = await server.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table: 'rebuild', vector: q, final_top_k: 10, ...(initial ? { initial_top_k: initial } : {}) });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          out.push(res.body.matches.map((m: { key: string; score: number }) => [m.key, m.score.toFixed(5)]));
        }
      }
      return out;
    };
    await server.kill('SIGTERM'); // graceful: indexes saved
    server = await startServer(env);
    const before = await ask();
    await server.kill('SIGTERM');

    const indexDir = path.join(dataDir, 'indexes');
    const files = (await readdir(indexDir)).filter((f) => f.endsWith('.usearch'));
    assert.ok(files.length > 0, 'an index was saved');
    for (const f of files) await writeFile(path.join(indexDir, f), Buffer.alloc(4096, 7)); // garbage
    server = await startServer(env);
    assert.deepEqual(await ask(), before);
    await server.kill('SIGTERM');

    for (const f of await readdir(indexDir)) {
      if (f.endsWith('.usearch')) await truncate(path.join(indexDir, f), 100);
    }
    server = await startServer(env);
    assert.deepEqual(await ask(), before);
    await server.kill('SIGKILL');

    for (const f of await readdir(indexDir)) await rm(path.join(indexDir, f));
    server = await startServer(env);
    try {
      assert.deepEqual(await ask(), before);
    } finally {
      await server.kill('SIGKILL');
    }
  });
});

describe('shutdown (real server process)', () => {
  let dataDir: string;
  before(async () => (dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-shutdown-'))));
  after(() => rm(dataDir, { recursive: true, force: true }));

  it('exits on SIGTERM within the grace even with a client stalled mid-body, keeping what was acknowledged', async () => {
    const env = { VSS_DATA_DIR: dataDir, VSS_ADMIN_KEY: ADMIN, VSS_SHUTDOWN_GRACE_MS: '1000' };
    const server = await startServer(env);
    const { hostname, port } = new URL(server.url);
    let exited = false;
    try {
      const wrote = await server.call('POST', '/v1/vector/write', { keyspace: 'default_keyspace', table: 'sd', key: 'kept', vector: [1, 2, 3] });
      assert.equal(wrote.status, 200);
      // A request whose body never arrives, and an idle keep-alive connection after an answer.
      const stalled = net.connect(Number(port), hostname);
      await new Promise((r) => stalled.once('connect', r));
      stalled.write(`POST /v1/vector/get HTTP/1.1\r\nHost: x\r\nx-api-key: ${ADMIN}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{`);
      stalled.on('error', () => undefined);
      const code = await Promise.race([server.kill('SIGTERM'), new Promise((r) => setTimeout(() => r('still running after 8 s'), 8_000).unref())]);
      assert.equal(code, 0);
      exited = true;
      stalled.destroy();
    } finally {
      if (!exited) await server.kill('SIGKILL');
    }
    const again = await startServer(env);
    try {
      assert.equal((await again.call('POST', '/v1/vector/get', { keyspace: 'default_keyspace', table: 'sd', key: 'kept' })).status, 200);
    } finally {
      await again.kill('SIGKILL');
    }
  });
});
