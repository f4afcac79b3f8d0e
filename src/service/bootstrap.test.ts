import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../config/config.ts';
import { FakeEmbeddingModel } from '../embedding/fake.ts';
import { ModelRegistry } from '../embedding/registry.ts';
import { openEmbeddedStorage } from '../storage/embedded/embedded-storage.ts';
import { ADMIN_KEY_FILE, bootstrap } from './bootstrap.ts';
import { authenticate, hashKey } from './keys.ts';

// Fake embedder: only its dimension is used.
describe('first start', () => {
  const open = async (env: Record<string, string>) => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'vss-boot-'));
    const config = loadConfig({ VSS_DATA_DIR: dataDir, ...env });
    const storage = await openEmbeddedStorage({ dataDir, index: config.index });
    const models = ModelRegistry.fromModels([new FakeEmbeddingModel({ name: config.defaultModel, dimension: 384 })]);
    return { dataDir, config, storage, models, reranker: null, done: async () => (await storage.close(), await rm(dataDir, { recursive: true, force: true })) };
  };

  it('stores no key when its file cannot be written, so the next start makes one it can show', async () => {
    const d = await open({});
    const file = path.join(d.dataDir, ADMIN_KEY_FILE);
    try {
      // A directory where the file goes: the write fails, as a start killed before it would leave things.
      await mkdir(file);
      await assert.rejects(bootstrap(d));
      assert.equal(await d.storage.countApiKeys(), 0);
      await rm(file, { recursive: true });
      const next = await bootstrap(d);
      assert.match(next.generatedKey!, /^vss_/);
      assert.equal((await readFile(file, 'utf8')).trim(), next.generatedKey);
      assert.equal((await authenticate(d.storage, next.generatedKey)).permissions, 'All');
    } finally {
      await d.done();
    }
  });

  it('generates an administrator key once, saves it 0600, stores only its hash', async () => {
    const d = await open({});
    try {
      const first = await bootstrap(d);
      assert.match(first.generatedKey!, /^vss_/);
      const file = path.join(d.dataDir, ADMIN_KEY_FILE);
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      assert.equal((await readFile(file, 'utf8')).trim(), first.generatedKey);
      const caller = await authenticate(d.storage, first.generatedKey);
      assert.equal(caller.permissions, 'All');
      assert.deepEqual(caller.resources, ['*']);
      const keys = await d.storage.listApiKeys();
      assert.equal(keys.length, 1);
      assert.equal(keys[0].hash, hashKey(first.generatedKey!));
      assert.notEqual(keys[0].hash, first.generatedKey);
      // The second start changes nothing and shows nothing.
      const second = await bootstrap(d);
      assert.equal(second.generatedKey, undefined);
      assert.equal((await d.storage.listApiKeys()).length, 1);
      assert.ok(await d.storage.getKeyspace('default_keyspace'));
      assert.equal((await d.storage.getTable('default_keyspace', 'vector'))!.dimension, 384);
    } finally {
      await d.done();
    }
  });

  it('uses VSS_ADMIN_KEY when set, and writes no key file', async () => {
    const d = await open({ VSS_ADMIN_KEY: 'my-own-admin-key-123456' });
    try {
      const r = await bootstrap(d);
      assert.equal(r.generatedKey, undefined);
      await assert.rejects(stat(path.join(d.dataDir, ADMIN_KEY_FILE)));
      assert.equal((await authenticate(d.storage, 'my-own-admin-key-123456')).permissions, 'All');
      await assert.rejects(authenticate(d.storage, 'my-own-admin-key-12345'), (e: { code?: string }) => e.code === 'unauthenticated');
    } finally {
      await d.done();
    }
  });
});
