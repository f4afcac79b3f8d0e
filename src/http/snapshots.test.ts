/**
 * Online snapshots (embedded): taken while writes go on, restored with `vss restore` into a new
 * data directory that answers searches exactly as the source did at the snapshot's moment and
 * holds no write acknowledged after it; damaged archives refused whole. Fake embedder: the
 * searches here are by vector and by words, compared answer for answer, no meaning claimed.
 */
import assert from 'node:assert/strict';
import { createHash, randomInt } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { run } from '../cli/main.ts';
import { ADMIN_KEY, multipart, startTestApp, type TestApp } from './testing.ts';

const KS = 'snapks';
const DIM = 32;
const WORDS = ['harbour', 'lantern', 'granite', 'meadow', 'falcon', 'copper', 'violet', 'thunder', 'orchard', 'pebble', 'saffron', 'glacier'];
const SEED_ROWS = 4000;

const randomVector = (): number[] => Array.from({ length: DIM }, () => Math.random() * 2 - 1);
const randomText = (): string => Array.from({ length: 3 + randomInt(6) }, () => WORDS[randomInt(WORDS.length)]).join(' ');

/** Runs the CLI in-process; its exit code and what it wrote. */
async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await run(args, { out: (s) => void (out += s), err: (s) => void (err += s), stdout: new PassThrough(), env: {}, isTTY: false });
  return { code, out, err };
}

describe('snapshots: online, consistent, restorable, refused when damaged', () => {
  let source: TestApp;
  let restored: TestApp | null = null;
  let work: string;

  before(async () => {
    source = await startTestApp({ model: 'fake', fakeDimension: DIM });
    work = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-snapshot-test-'));
    assert.equal((await source.call('POST', '/v1/keyspaces/create', { keyspace: KS })).statusCode, 200);
    for (let i = 0; i < SEED_ROWS; i += 500) {
      const vectors = Array.from({ length: 500 }, (_, j) => ({ key: `seed-${i + j}`, vector: randomVector(), text: randomText(), metadata: { n: i + j, even: (i + j) % 2 === 0 } }));
      assert.equal((await source.call('POST', '/v1/vector/batch', { keyspace: KS, table: 'docs', vectors })).statusCode, 200);
    }
    const form = multipart([{ name: 'keyspace', value: KS }, { name: 'table', value: 'files' }, { name: 'file', filename: 'notes.txt', content: 'The lighthouse keeper kept a log of every ship that passed the granite point.' }]);
    assert.equal((await source.app.inject({ method: 'POST', url: '/v1/embed/', headers: { ...form.headers, 'x-api-key': ADMIN_KEY }, payload: form.payload })).statusCode, 200);
    assert.equal((await source.call('POST', '/v1/metadata/write', { keyspace: KS, table: 'docs', source_file: 'seed-1', raw_value: 'raw', source_type: 'txt', processing_details: 'by hand' })).statusCode, 200);
  });

  after(async () => {
    await restored?.close();
    await source.close();
    await fs.rm(work, { recursive: true, force: true });
  });

  it('is taken while writes go on, and the restored directory answers as the source did at its moment', async () => {
    // A writer acknowledges rows w-0, w-1, ... one after another for as long as the snapshot runs, and
    // some more, noting when each was sent and acknowledged; an uploader replaces a stored file meanwhile.
    const now = () => performance.timeOrigin + performance.now();
    const sentAt: number[] = [];
    const ackedAt: number[] = [];
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        const i = sentAt.length;
        sentAt.push(now());
        const res = await source.call('POST', '/v1/vector/write', { keyspace: KS, table: 'live', key: `w-${i}`, vector: randomVector(), text: randomText(), metadata: { seq: i } });
        assert.equal(res.statusCode, 200);
        ackedAt.push(now());
      }
    })();
    let replaced = 0;
    const uploader = (async () => {
      while (!stop) {
        const form = multipart([{ name: 'keyspace', value: KS }, { name: 'table', value: 'files' }, { name: 'file', filename: 'notes.txt', content: `Version ${++replaced}: the keeper logged ${randomText()}.` }]);
        assert.equal((await source.app.inject({ method: 'POST', url: '/v1/embed/', headers: { ...form.headers, 'x-api-key': ADMIN_KEY }, payload: form.payload })).statusCode, 200);
      }
    })();
    while (ackedAt.length < 20) await new Promise((r) => setImmediate(r));
    const ackedBefore = ackedAt.length;
    const [res, second] = await Promise.all([source.call('POST', '/v1/snapshots'), new Promise((r) => setTimeout(r, 1)).then(() => source.call('POST', '/v1/snapshots'))]);
    const sentAfter = sentAt.length; // every write from here on began after the snapshot answered
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(second.statusCode, 409, 'one snapshot at a time');
    assert.equal(second.json().code, 'snapshot_in_progress');
    while (sentAt.length < sentAfter + 20) await new Promise((r) => setImmediate(r));
    stop = true;
    await Promise.all([writer, uploader]);
    assert.ok(sentAfter - ackedBefore > 1, `writes went on during the snapshot (${sentAfter - ackedBefore})`);

    const snap = res.json();
    assert.match(snap.name, /^snapshot-.*\.vss$/);
    const stat = await fs.stat(path.join(source.dataDir, 'snapshots', snap.name));
    assert.equal(stat.mode & 0o777, 0o600);
    const list = (await source.call('GET', '/v1/snapshots')).json();
    assert.deepEqual(list.snapshots.map((s: { name: string }) => s.name), [snap.name]);
    assert.equal(list.in_progress, null);

    const download = await source.call('GET', `/v1/snapshots/${snap.name}`);
    assert.equal(download.statusCode, 200);
    assert.equal(download.rawPayload.length, snap.size);
    const archive = path.join(work, snap.name);
    await fs.writeFile(archive, download.rawPayload);

    const dir = path.join(work, 'restored');
    const r = await cli(['--json', 'restore', archive, '--data-dir', dir]);
    assert.equal(r.code, 0, r.err);
    assert.equal(JSON.parse(r.out).rows, snap.rows);
    assert.deepEqual(await fs.readdir(work), [snap.name, 'restored'].sort(), 'nothing but the new directory');
    restored = await startTestApp({ model: 'fake', fakeDimension: DIM, dataDir: dir });

    // The restored rows w-* are a prefix w-0..w-(k-1): every write acknowledged before the request, none begun after the answer.
    const count = async (t: TestApp, filter: object) => (await t.call('POST', '/v1/vector/count', { keyspace: KS, table: 'live', filter })).json().count as number;
    const k = await count(restored, { seq: { $exists: true } });
    assert.equal(await count(restored, { seq: { $lt: k } }), k, 'the written rows are a prefix of the acknowledged order');
    assert.ok(k >= ackedBefore, `holds every write acknowledged before the snapshot (${k} >= ${ackedBefore})`);
    assert.ok(k <= sentAfter, `holds no write begun after the snapshot answered (${k} <= ${sentAfter})`);
    // And against the moment the snapshot names (ms resolution, 5 ms either side for the clock's grain):
    const moment = Date.parse(snap.created_at);
    const lastIn = k - 1;
    assert.ok(lastIn < 0 || sentAt[lastIn] <= moment + 5, `w-${lastIn}, in the copy, was sent before ${snap.created_at}`);
    assert.ok(k >= ackedAt.length || ackedAt[k] >= moment - 5, `w-${k}, not in the copy, was acknowledged after ${snap.created_at}`);
    assert.equal(k, snap.tables.find((t: { table: string }) => t.table === 'live').rows);
    assert.equal(SEED_ROWS, snap.tables.find((t: { table: string }) => t.table === 'docs').rows);

    // The source as it stood at the snapshot's moment: without the rows written after it. (Only
    // vector searches on that table: SQLite's BM25 statistics keep deleted rows' terms until a
    // merge, so deleting cannot give back the moment's word statistics; the restored copy has them.)
    assert.equal((await source.call('POST', '/v1/vector/delete', { keyspace: KS, table: 'live', filter: { seq: { $gte: k } } })).statusCode, 200);
    for (let i = 0; i < 200; i++) {
      const body =
        i % 5 === 4
          ? { keyspace: KS, table: 'live', vector: randomVector(), final_top_k: 10 }
          : i % 5 === 3
            ? { keyspace: KS, table: 'docs', query: randomText(), mode: 'lexical', final_top_k: 10 }
            : i % 5 === 2
              ? { keyspace: KS, table: 'docs', query: randomText(), mode: 'hybrid', final_top_k: 10 }
              : { keyspace: KS, table: 'docs', vector: randomVector(), final_top_k: 10, ...(i % 5 === 1 ? { filter: { even: true } } : {}) };
      const a = await source.call('POST', '/v1/search/', body);
      const b = await restored.call('POST', '/v1/search/', body);
      assert.equal(a.statusCode, 200, a.body);
      assert.ok(a.json().matches.length > 0);
      assert.deepEqual(b.json().matches, a.json().matches, `search ${i}: ${JSON.stringify(body).slice(0, 80)}`);
    }
    // Stored files and metadata records came along: the file as one version, content and record together.
    const f = await restored.call('GET', `/v1/files/${KS}/files/notes.txt`);
    assert.equal(f.statusCode, 200);
    const [record] = (await restored.call('GET', `/v1/files/?keyspace=${KS}&table=files`)).json().details;
    assert.equal(createHash('sha256').update(f.rawPayload).digest('hex'), record.sha256);
    const version = Number(/^Version (\d+):/.exec(f.body)![1]);
    assert.ok(version >= 1 && version <= replaced, `version ${version} of ${replaced}`);
    const chunk = await restored.call('POST', '/v1/vector/get', { keyspace: KS, table: 'files', key: 'notes.txt#0' });
    assert.match(chunk.json().text, new RegExp(`^Version ${version}:`));
    const hit = (await restored.call('POST', '/v1/search/', { keyspace: KS, table: 'docs', vector: randomVector(), filter: { n: 1 } })).json().matches[0];
    assert.equal(hit.metadata.processing_details, undefined, 'seed-1 names no source_file');
    assert.deepEqual(await restored.deps.storage.getMetadata(KS, 'docs', ['seed-1']), await source.deps.storage.getMetadata(KS, 'docs', ['seed-1']));

    assert.equal((await source.call('DELETE', `/v1/snapshots/${snap.name}`)).statusCode, 200);
    assert.equal((await source.call('GET', `/v1/snapshots/${snap.name}`)).statusCode, 404);
  });

  it('refuses a truncated archive or a flipped byte whole, leaving nothing behind', async () => {
    const res = await source.call('POST', '/v1/snapshots');
    assert.equal(res.statusCode, 200, res.body);
    const bytes = (await source.call('GET', `/v1/snapshots/${res.json().name}`)).rawPayload;
    const cases: [string, Buffer][] = [
      ['truncated at the end', bytes.subarray(0, bytes.length - 1)],
      ['truncated in the middle', bytes.subarray(0, Math.floor(bytes.length / 2))],
      ['one extra byte', Buffer.concat([bytes, Buffer.from([0])])],
    ];
    // Flipped bytes: in the magic, the manifest, a member, the digest, and at random places.
    for (const at of [2, 20, Math.floor(bytes.length / 2), bytes.length - 5, ...Array.from({ length: 6 }, () => randomInt(bytes.length))]) {
      const copy = Buffer.from(bytes);
      copy[at] ^= 1 << randomInt(8);
      cases.push([`byte ${at} flipped`, copy]);
    }
    const foreign = Buffer.from(bytes);
    foreign.write('PK\x03\x04', 0, 'latin1');
    cases.push(['not a snapshot', foreign]);
    const dir = await fs.mkdtemp(path.join(work, 'damaged-'));
    for (const [what, data] of cases) {
      const archive = path.join(dir, 'archive.vss');
      await fs.writeFile(archive, data);
      const r = await cli(['restore', archive, '--data-dir', path.join(dir, 'out')]);
      assert.equal(r.code, 6, `${what}: refused (${r.err})`);
      assert.match(r.err, /truncated|damaged|not a vss snapshot|manifest|extra bytes|SHA-256/, what);
      assert.deepEqual(await fs.readdir(dir), ['archive.vss'], `${what}: nothing restored, no temp left`);
    }
    // And the intact one restores.
    await fs.writeFile(path.join(dir, 'archive.vss'), bytes);
    assert.equal((await cli(['restore', path.join(dir, 'archive.vss'), '--data-dir', path.join(dir, 'out')])).code, 0);
  });
});
