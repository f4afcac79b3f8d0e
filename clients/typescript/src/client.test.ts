/** VssClient against a real server (scripts/start.mjs, real model, temporary data directory). */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { VssClient, VssError } from './index.ts';
import { fileFromPath } from './node.ts';
import { startTempServer, type TempServer } from './test-server.ts';

const ADMIN = 'client-admin-key-0123456789abcdef';
const KS = 'default_keyspace';

/** The error a promise rejects with, which must be a VssError. */
async function failure(p: Promise<unknown>): Promise<VssError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof VssError, `expected a VssError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected the call to fail');
}

describe('VssClient against a real server', () => {
  let running: TempServer;
  let server: TempServer['server'];
  let dir: string;
  let client: VssClient;
  /** Paths of the requests the client sent, in order. */
  const sent: string[] = [];

  before(async () => {
    running = await startTempServer('tsclient', ADMIN);
    ({ server, dir } = running);
    const counting: typeof fetch = (input, init) => {
      sent.push(new URL(String(input)).pathname);
      return fetch(input, init);
    };
    client = new VssClient({ url: server.url, apiKey: ADMIN, fetch: counting });
  });
  after(() => running?.stop());

  it('upserts texts, finds them by meaning, gets, counts, lists and deletes them', async () => {
    const table = 'texts';
    const written = await client.upsert({
      keyspace: KS,
      table,
      vectors: [
        { key: 'cat', text: 'A cat is lying on a sofa.', metadata: { kind: 'animal' } },
        { key: 'bread', text: 'Let the dough rise before baking the bread.', metadata: { kind: 'food' } },
        { key: 'car', text: 'The mechanic replaced the brakes of the car.', metadata: { kind: 'machine' } },
      ],
    });
    assert.deepEqual({ written: written.written, keys: written.keys, batches: written.batches }, { written: 3, keys: ['cat', 'bread', 'car'], batches: 1 });

    const found = await client.search({ keyspace: KS, table, query: 'a kitten on the couch', final_top_k: 2 });
    assert.equal(found.matches[0].key, 'cat');
    assert.equal(found.matches[0].metadata.text, 'A cat is lying on a sofa.');
    const filtered = await client.search({ keyspace: KS, table, query: 'a kitten on the couch', filter: { kind: { $ne: 'animal' } } });
    assert.ok(filtered.matches.length === 2 && filtered.matches.every((m) => m.key !== 'cat'));

    const row = await client.get({ keyspace: KS, table, key: 'bread', include_vector: true });
    assert.equal(row.text, 'Let the dough rise before baking the bread.');
    assert.equal(row.vector?.length, 384);
    const byVector = await client.search({ keyspace: KS, table, vector: row.vector!, final_top_k: 1 });
    assert.equal(byVector.matches[0].key, 'bread');

    assert.equal((await client.count({ keyspace: KS, table })).count, 3);
    const keys: string[] = [];
    for await (const r of client.rows({ keyspace: KS, table, limit: 2, include_vector: false })) keys.push(r.key);
    assert.deepEqual(keys, ['bread', 'car', 'cat']);

    assert.equal((await client.delete({ keyspace: KS, table, filter: { kind: 'machine' } })).deleted, 1);
    assert.equal((await client.delete({ keyspace: KS, table, keys: ['bread', 'nothing'] })).deleted, 1);
    assert.deepEqual((await client.list({ keyspace: KS, table })).vectors.map((v) => v.key), ['cat']);
  });

  it('splits 2,500 records into 3 batch requests, and by bytes under a lower byte limit', async () => {
    sent.length = 0;
    const vectors = Array.from({ length: 2500 }, (_, i) => ({ key: `k${i}`, vector: new Float32Array([1, i + 1, i % 7, 0.5]), metadata: { i } }));
    const answer = await client.upsert({ keyspace: KS, table: 'bulk', vectors });
    assert.equal(answer.written, 2500);
    assert.equal(answer.batches, 3);
    assert.deepEqual(sent, ['/v1/vector/batch', '/v1/vector/batch', '/v1/vector/batch']);
    assert.equal((await client.count({ keyspace: KS, table: 'bulk' })).count, 2500);
    const stored = await client.get({ keyspace: KS, table: 'bulk', key: 'k2499' });
    assert.deepEqual(stored.vector, [1, 2500, 2499 % 7, 0.5]);

    // 40 records of ~10 KiB each under a 64 KiB body limit: several requests, every record written once.
    const small = new VssClient({ url: server.url, apiKey: ADMIN, batch: { maxBytes: 64 * 1024 }, fetch: (i, init) => (sent.push(new URL(String(i)).pathname), fetch(i, init)) });
    sent.length = 0;
    const big = Array.from({ length: 40 }, (_, i) => ({ key: `b${i}`, vector: [1, i, 2, 3], metadata: { pad: 'x'.repeat(10_000) } }));
    const split = await small.upsert({ keyspace: KS, table: 'bulk', vectors: big });
    assert.ok(split.batches >= 7, `${split.batches} batches`);
    assert.equal(sent.length, split.batches);
    assert.equal((await client.count({ keyspace: KS, table: 'bulk' })).count, 2540);

    sent.length = 0;
    const removed = await client.delete({ keyspace: KS, table: 'bulk', keys: vectors.map((v) => v.key) });
    assert.equal(removed.deleted, 2500);
    assert.equal(sent.length, 3);
  });

  it('uploads from a path, a Buffer, a Node stream and a web stream; lists, downloads and deletes files', async () => {
    const table = 'docs';
    const notes = path.join(dir, 'notes.md');
    await writeFile(notes, '# Garden\n\nTomatoes need full sun and regular watering in summer.\n');
    const fromPath = await client.upload(await fileFromPath(notes), { keyspace: KS, table });
    assert.equal(fromPath.file.name, 'notes.md');
    assert.ok(fromPath.file.chunks >= 1);

    const bytes = Buffer.from('The lighthouse keeper climbed the stairs every night to light the lamp.');
    assert.equal((await client.upload(bytes, { name: 'lighthouse.txt', keyspace: KS, table })).file.size, bytes.byteLength);
    const nodeStream = Readable.from([Buffer.from('Penguins huddle together '), Buffer.from('to keep warm in the Antarctic winter.')]);
    await client.upload(nodeStream, { name: 'penguins.txt', keyspace: KS, table });
    const webStream = new Blob(['Violins have four strings tuned in fifths.']).stream();
    await client.upload(webStream, { name: 'violin.txt', keyspace: KS, table });

    const listed = await client.files({ keyspace: KS, table });
    assert.deepEqual(listed.files, ['lighthouse.txt', 'notes.md', 'penguins.txt', 'violin.txt']);
    const hit = await client.search({ keyspace: KS, table, query: 'birds staying warm in the cold', final_top_k: 1 });
    assert.equal(hit.matches[0].metadata.source_file, 'penguins.txt');

    assert.deepEqual(Buffer.from(await client.download({ keyspace: KS, table, name: 'lighthouse.txt' })), bytes);
    assert.equal((await client.deleteFile({ keyspace: KS, table, name: 'lighthouse.txt' })).deleted, true);
    assert.equal((await failure(client.download({ keyspace: KS, table, name: 'lighthouse.txt' }))).code, 'file_not_found');
  });

  it('creates and lists keyspaces and tables', async () => {
    const made = await client.createKeyspace('tsclient_space');
    assert.equal(made.keyspace, 'tsclient_space');
    const unnamed = await client.createKeyspace();
    assert.match(unnamed.keyspace, /^ks_[0-9a-f]{12}$/);
    await client.createTable({ keyspace: 'tsclient_space', table: 'small', dimension: 3, metric: 'dot' });
    const view = (await client.listKeyspaces()).find((k) => k.keyspace === 'tsclient_space');
    assert.deepEqual(view?.tables.map((t) => [t.table, t.dimension]).sort(), [['small', 3], ['vector', 384]]);
    assert.equal((await failure(client.createKeyspace('tsclient_space'))).code, 'already_exists');
  });

  it('makes, lists, rotates and revokes keys; a Read key cannot write', async () => {
    const reader = await client.createKey({ name: 'reader', permissions: 'Read', resources: [KS] });
    assert.match(reader.key, /^vss_/);
    assert.ok((await client.listKeys()).some((k) => k.key_id === reader.key_id && k.permissions === 'Read'));
    const asReader = new VssClient({ url: server.url, apiKey: reader.key });
    assert.equal((await asReader.count({ keyspace: KS, table: 'texts' })).count, 1);
    const refused = await failure(asReader.upsert({ keyspace: KS, table: 'texts', vectors: [{ key: 'x', text: 'x' }] }));
    assert.deepEqual([refused.status, refused.code], [403, 'forbidden']);

    const rotated = await client.rotateKey(reader.key_id);
    assert.equal(rotated.rotated_from, reader.key_id);
    assert.equal((await new VssClient({ url: server.url, apiKey: rotated.key }).count({ keyspace: KS, table: 'texts' })).count, 1);
    assert.notEqual((await client.revokeKey(reader.key_id)).revoked_at, null);
    assert.equal((await failure(asReader.count({ keyspace: KS, table: 'texts' }))).code, 'unauthenticated');
  });

  it('raises VssError with the problem body: code, status, detail and every bad field', async () => {
    const missing = await failure(client.get({ keyspace: KS, table: 'texts', key: 'nope' }));
    assert.deepEqual([missing.status, missing.code], [404, 'vector_not_found']);
    assert.match(missing.detail, /nope/);
    assert.ok(missing.requestId);

    const invalid = await failure(client.search({ keyspace: KS, table: 'texts', query: 'x', initial_top_k: 3, final_top_k: 5 }));
    assert.deepEqual([invalid.status, invalid.code], [400, 'validation_failed']);
    assert.deepEqual(invalid.errors.map((e) => e.path), ['/body/final_top_k']);

    const bad = await failure(client.upsert({ keyspace: KS, table: 'bulk', vectors: [{ key: 'a', vector: [1, 2] }, { key: 'b', vector: [1, 2, 3] }] }));
    assert.equal(bad.code, 'dimension_mismatch');
    assert.deepEqual(bad.errors.map((e) => e.path), ['/body/vectors/0/vector', '/body/vectors/1/vector']);

    assert.equal((await failure(client.search({ keyspace: 'no_such_space', table: 't', query: 'x' }))).code, 'keyspace_not_found');
    const anonymous = await failure(new VssClient({ url: server.url, apiKey: 'wrong-key-0123456789' }).listKeyspaces());
    assert.deepEqual([anonymous.status, anonymous.code], [401, 'unauthenticated']);
    const nobody = await failure(new VssClient({ url: 'http://127.0.0.1:9', apiKey: ADMIN }).health());
    assert.deepEqual([nobody.status, nobody.code], [0, 'network_error']);
  });

  it('embeds texts and reports health', async () => {
    const [a, b, c] = await client.embed(['a kitten', 'a small cat', 'a tax return']);
    const cos = (x: number[], y: number[]) => x.reduce((s, v, i) => s + v * y[i], 0);
    assert.equal(a.length, 384);
    assert.ok(cos(a, b) > cos(a, c));
    assert.equal((await client.health()).status, 'ok');
  });
});
