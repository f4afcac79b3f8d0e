import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { lieAboutSize, makeDocx, makePdf, makeZipBomb } from '../ingest/fixtures.ts';
import { ADMIN_KEY, multipart, startTestApp, type TestApp } from './testing.ts';

const fileForm = (filename: string, content: Buffer | string, fields: Record<string, string> = {}, type?: string) =>
  multipart([...Object.entries(fields).map(([name, value]) => ({ name, value })), { name: 'file', filename, content, type }]);

async function upload(t: TestApp, form: { payload: Buffer | Readable; headers: Record<string, string> }, key?: string): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: '/v1/embed/', headers: { ...form.headers, 'x-api-key': key ?? ADMIN_KEY }, payload: form.payload });
}

async function search(t: TestApp, query: string, table: string, extra: Record<string, unknown> = {}) {
  const res = await t.call('POST', '/v1/search/', { query, keyspace: 'default_keyspace', table, final_top_k: 3, ...extra });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().matches as { key: string; score: number; metadata: Record<string, unknown> }[];
}

const count = async (t: TestApp, table: string, filter?: object) => {
  const res = await t.call('POST', '/v1/vector/count', { keyspace: 'default_keyspace', table, ...(filter ? { filter } : {}) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().count as number;
};

const listNames = async (t: TestApp, key?: string) => {
  const res = await t.call('GET', '/v1/files/', undefined, key);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().files as string[];
};

const contentFiles = (t: TestApp) => t.storedContent();
const tempUploads = (t: TestApp) => fs.readdir(path.join(t.dataDir, 'uploads'));

const corruptPdf = Buffer.concat([Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >>\n'), Buffer.alloc(3000, 0x5a), Buffer.from('\n%%EOF\n')]);

describe('files: upload, search by meaning, list, download, delete (real model)', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'real' })));
  after(() => t.close());

  it('finds every format by meaning, with its source_file in the match metadata', async () => {
    const files: Array<{ name: string; bytes: Buffer; type: string; query: string }> = [
      {
        name: 'volcano.pdf',
        bytes: await makePdf([['The volcano erupted at dawn, and rivers of molten lava and clouds of ash poured down onto the villages of the island.']]),
        type: 'pdf',
        query: 'magma and ash from an erupting mountain',
      },
      {
        name: 'bakery.docx',
        bytes: await makeDocx('Our bakery', ['Every night the bakers knead sourdough and leave the loaves to rise slowly before baking them in a wood-fired oven.']),
        type: 'docx',
        query: 'baking bread in an oven',
      },
      {
        name: 'match.html',
        bytes: Buffer.from('<!doctype html><html><head><title>Match report</title><script>var x = 1;</script></head><body><h1>Cup final</h1><p>The goalkeeper saved a penalty in the last minute and the team won the football championship.</p></body></html>'),
        type: 'html',
        query: 'soccer goalie stops a penalty kick',
      },
      {
        name: 'planets.csv',
        bytes: Buffer.from('planet,description\nMars,"the red planet, covered in rusty iron dust"\nJupiter,the largest gas giant of the solar system\nSaturn,a gas giant with bright rings of ice\n'),
        type: 'csv',
        query: 'planets orbiting the sun',
      },
      {
        name: 'kitten.json',
        bytes: Buffer.from(JSON.stringify({ pet: 'kitten', care: ['Feed the kitten small meals four times a day.', 'Brush its fur and give it a scratching post.'] })),
        type: 'json',
        query: 'how to look after a young cat',
      },
      {
        name: 'sailing.md',
        bytes: Buffer.from('# Sailing\n\nTo **tack**, the sailor turns the bow of the boat through the wind and trims the mainsail on the other side.\n'),
        type: 'md',
        query: 'steering a sailboat against the wind',
      },
    ];
    for (const f of files) {
      // The client's Content-Type is not trusted: every part claims to be octet-stream.
      const res = await upload(t, fileForm(f.name, f.bytes, { table: 'formats' }));
      assert.equal(res.statusCode, 200, `${f.name}: ${res.body}`);
      const body = res.json();
      assert.equal(body.file.name, f.name);
      assert.equal(body.file.type, f.type, f.name);
      assert.equal(body.file.keyspace, 'default_keyspace');
      assert.equal(body.file.table, 'formats');
      assert.equal(body.file.size, f.bytes.length);
      assert.ok(body.file.chunks >= 1);
      assert.match(body.file.method, new RegExp(`^${f.type}:`));
      assert.ok(body.files.includes(f.name));
    }
    for (const f of files) {
      const [top] = await search(t, f.query, 'formats');
      assert.equal(top?.metadata.source_file, f.name, `"${f.query}" found ${top?.key}`);
      assert.equal(top.metadata.source_type, f.type);
      assert.equal(typeof top.metadata.chunk_index, 'number');
      assert.equal(typeof top.metadata.text, 'string');
      assert.match(top.key, new RegExp(`^${f.name.replace('.', '\\.')}#\\d+$`));
      // The file's metadata record is joined in.
      const details = JSON.parse(top.metadata.processing_details as string);
      assert.equal(details.model, 'all-MiniLM-L6-v2');
      assert.ok(details.chunks >= 1 && (top.metadata.chunk_index as number) < details.chunks);
      assert.ok(details.chunk_size > 0 && details.chunk_overlap >= 0 && typeof details.method === 'string');
    }
    const list = await t.call('GET', '/v1/files/?keyspace=default_keyspace&table=formats');
    assert.deepEqual(list.json().files, files.map((f) => f.name).sort());
    assert.equal(list.json().details.length, files.length);
  });

  it('accepts a body made by FormData, with fields after the file', async () => {
    const fd = new FormData();
    fd.append('file', new Blob(['Glaciers carve deep valleys as the ice slowly grinds over the rock.']), 'glacier.txt');
    fd.append('table', 'formdata');
    fd.append('chunk_size', '64');
    const res = new Response(fd);
    const out = await upload(t, { payload: Buffer.from(await res.arrayBuffer()), headers: { 'content-type': res.headers.get('content-type')! } });
    assert.equal(out.statusCode, 200, out.body);
    assert.equal(out.json().file.table, 'formdata');
    assert.equal(out.json().file.chunk_size, 64);
    const [top] = await search(t, 'moving ice sheets eroding mountains', 'formdata');
    assert.equal(top.metadata.source_file, 'glacier.txt');
  });

  it('keeps only the sanitised base name: nothing is written outside the data directory', async () => {
    const marker = `evil-${randomUUID()}.txt`;
    const outside = [path.resolve(t.dataDir, '..', marker), path.resolve(t.dataDir, '..', '..', marker), path.join(os.tmpdir(), marker)];
    for (const name of ['../../etc/passwd', `../../${marker}`, `..\\..\\${marker}`, `/tmp/${marker}`]) {
      const res = await upload(t, fileForm(name, 'root:x:0:0:root:/root:/bin/bash\n', { table: 'traversal' }));
      assert.equal(res.statusCode, 200, res.body);
      assert.ok(!res.json().file.name.includes('/') && !res.json().file.name.includes('\\') && !res.json().file.name.includes('..'), res.json().file.name);
    }
    const names = (await t.call('GET', '/v1/files/?table=traversal')).json().files;
    assert.deepEqual(names, [marker, 'passwd']);
    for (const p of outside) await assert.rejects(fs.stat(p), { code: 'ENOENT' });
    // Stored under server-chosen names only.
    for (const f of await contentFiles(t)) assert.match(f, /^[0-9a-f-]{36}$/);
    assert.deepEqual(await tempUploads(t), []);
    const dl = await t.call('GET', '/v1/files/default_keyspace/traversal/passwd');
    assert.equal(dl.statusCode, 200);
    assert.match(String(dl.headers['content-disposition']), /^attachment; filename="passwd"/);
  });

  it('answers 415 for unsupported content (whatever its name) and for a non-multipart body', async () => {
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(200, 7)]);
    const elf = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(200, 0)]);
    const before = await contentFiles(t);
    for (const [name, bytes] of [['image.txt', png], ['program.pdf', elf]] as const) {
      const res = await upload(t, fileForm(name, bytes, { table: 'rejects' }, 'text/plain'));
      assert.equal(res.statusCode, 415, res.body);
      assert.equal(res.json().code, 'unsupported_media_type');
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    }
    const json = await t.call('POST', '/v1/embed/', { file: 'hello' });
    assert.equal(json.statusCode, 415, json.body);
    assert.deepEqual(await contentFiles(t), before);
    assert.equal((await t.call('GET', '/v1/files/?table=rejects')).json().files.length, 0);
  });

  it('answers 400 for a corrupt PDF and writes nothing', async () => {
    const table = 'vector';
    const vectors = await count(t, table);
    const files = await listNames(t);
    const stored = await contentFiles(t);
    const res = await upload(t, fileForm('broken.pdf', corruptPdf));
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'validation_failed');
    assert.equal(res.json().errors[0].path, '/file');
    assert.equal(await count(t, table), vectors);
    assert.deepEqual(await listNames(t), files);
    assert.deepEqual(await contentFiles(t), stored);
    assert.deepEqual(await tempUploads(t), []);
    assert.equal((await t.call('GET', '/v1/files/default_keyspace/vector/broken.pdf')).statusCode, 404);
  });

  it('answers 400 for a zip bomb dressed as a .docx, in bounded memory', async () => {
    const bomb = await makeZipBomb(1024); // 1 GiB of zeros in ~1 MB
    const liar = lieAboutSize(await makeZipBomb(300), 'word/document.xml', 1000); // claims 1000 bytes
    for (const [name, bytes] of [['bomb.docx', bomb], ['liar.docx', liar]] as const) {
      global.gc?.();
      const base = process.memoryUsage().rss;
      let peak = base;
      const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      const res = await upload(t, fileForm(name, bytes, { table: 'bombs' }));
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
      assert.equal(res.json().code, 'validation_failed');
      assert.ok(peak - base < 150 * 1024 * 1024, `${name}: RSS grew by ${Math.round((peak - base) / 1048576)} MiB`);
    }
    assert.equal((await t.call('GET', '/v1/files/?table=bombs')).json().files.length, 0);
    assert.deepEqual(await tempUploads(t), []);
  });

  it('replaces a re-uploaded file: old chunks gone, chunk count from the new file', async () => {
    const table = 'reupload';
    const old = Array.from({ length: 12 }, (_, i) => `Paragraph ${i}: the orchestra rehearsed the symphony, the violins tuning while the conductor raised the baton.`).join('\n\n');
    let res = await upload(t, fileForm('notes.md', old, { table, chunk_size: '32', chunk_overlap: '0' }));
    assert.equal(res.statusCode, 200, res.body);
    const oldChunks = res.json().file.chunks;
    assert.ok(oldChunks >= 4, `only ${oldChunks} chunks`);
    assert.equal(res.json().file.replaced, false);
    assert.equal((await search(t, 'classical music concert rehearsal', table))[0].metadata.source_file, 'notes.md');

    res = await upload(t, fileForm('notes.md', '# Garden\n\nPlant the tomato seedlings in spring and water them every morning.', { table }));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().file.replaced, true);
    const newChunks = res.json().file.chunks;
    assert.ok(newChunks < oldChunks);
    assert.equal(await count(t, table, { source_file: 'notes.md' }), newChunks);
    assert.equal(await count(t, table), newChunks);
    for (let i = newChunks; i < oldChunks; i++) {
      const got = await t.call('POST', '/v1/vector/get', { keyspace: 'default_keyspace', table, key: `notes.md#${i}` });
      assert.equal(got.statusCode, 404, `notes.md#${i} is left over`);
    }
    const matches = await search(t, 'classical music concert rehearsal', table, { final_top_k: 10 });
    assert.ok(matches.every((m) => !String(m.metadata.text).includes('orchestra')), 'old text is still found');
    assert.equal((await search(t, 'growing vegetables', table))[0].metadata.source_file, 'notes.md');
    const details = JSON.parse((await search(t, 'growing vegetables', table))[0].metadata.processing_details as string);
    assert.equal(details.chunks, newChunks);
    const names = (await t.call('GET', `/v1/files/?table=${table}`)).json().files;
    assert.deepEqual(names, ['notes.md']);
  });

  it('keeps the old file searchable and listed when a re-upload fails', async () => {
    const table = 'failsafe';
    const good = await makePdf([['The lighthouse keeper climbed the tower every evening to light the lamp for passing ships.']]);
    let res = await upload(t, fileForm('report.pdf', good, { table }));
    assert.equal(res.statusCode, 200, res.body);
    const chunks = res.json().file.chunks;
    const stored = await contentFiles(t);

    res = await upload(t, fileForm('report.pdf', corruptPdf, { table }));
    assert.equal(res.statusCode, 400, res.body);
    res = await upload(t, fileForm('report.pdf', Buffer.alloc(0), { table }));
    assert.equal(res.statusCode, 400, res.body);

    assert.equal((await search(t, 'a lamp that guides ships at sea', table))[0].metadata.source_file, 'report.pdf');
    assert.equal(await count(t, table), chunks);
    assert.deepEqual((await t.call('GET', `/v1/files/?table=${table}`)).json().files, ['report.pdf']);
    assert.deepEqual(await contentFiles(t), stored);
    const dl = await t.call('GET', `/v1/files/default_keyspace/${table}/report.pdf`);
    assert.deepEqual(dl.rawPayload, good);
  });

  it('downloads the exact bytes with a safe disposition and the detected type', async () => {
    const docx = await makeDocx('Minutes', ['The committee approved the budget for the new library.']);
    const name = 'Minutes "draft" #1 ü.docx';
    const res = await upload(t, fileForm(name, docx, { table: 'downloads' }, 'text/html'));
    assert.equal(res.statusCode, 200, res.body);
    const dl = await t.call('GET', `/v1/files/default_keyspace/downloads/${encodeURIComponent(name)}`);
    assert.equal(dl.statusCode, 200, dl.body);
    assert.deepEqual(dl.rawPayload, docx);
    assert.equal(dl.headers['content-type'], 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    assert.equal(dl.headers['x-content-type-options'], 'nosniff');
    const disposition = String(dl.headers['content-disposition']);
    assert.match(disposition, /^attachment; filename="Minutes _draft_ _1 _\.docx"; filename\*=UTF-8''/);
    assert.equal(decodeURIComponent(disposition.split("UTF-8''")[1]), name);
    const missing = await t.call('GET', '/v1/files/default_keyspace/downloads/nope.docx');
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'file_not_found');
  });

  it('deletes a file with its vectors and metadata record', async () => {
    const table = 'deletes';
    const res = await upload(t, fileForm('tides.txt', 'The moon pulls on the oceans and causes the tides to rise and fall twice a day.', { table }));
    assert.equal(res.statusCode, 200, res.body);
    await upload(t, fileForm('other.txt', 'Bees collect nectar from flowers to make honey.', { table }));
    const stored = (await contentFiles(t)).length;
    const del = await t.call('DELETE', `/v1/files/default_keyspace/${table}/tides.txt`);
    assert.equal(del.statusCode, 200, del.body);
    assert.deepEqual(del.json(), { deleted: true, keyspace: 'default_keyspace', table, name: 'tides.txt', chunks: res.json().file.chunks });
    assert.equal(await count(t, table, { source_file: 'tides.txt' }), 0);
    assert.equal(await count(t, table), 1);
    assert.equal((await t.deps.storage.getMetadata('default_keyspace', table, ['tides.txt'])).size, 0);
    assert.equal((await t.deps.storage.getMetadata('default_keyspace', table, ['other.txt'])).size, 1);
    assert.deepEqual((await t.call('GET', `/v1/files/?table=${table}`)).json().files, ['other.txt']);
    assert.equal((await contentFiles(t)).length, stored - 1);
    assert.ok((await search(t, 'ocean tides and the moon', table)).every((m) => m.metadata.source_file !== 'tides.txt'));
    assert.equal((await t.call('GET', `/v1/files/default_keyspace/${table}/tides.txt`)).statusCode, 404);
    const again = await t.call('DELETE', `/v1/files/default_keyspace/${table}/tides.txt`);
    assert.equal(again.statusCode, 404);
    assert.equal(again.json().code, 'file_not_found');
  });

  it('enforces permissions and tenants', async () => {
    const read = await t.makeKey('Read');
    const denied = await upload(t, fileForm('x.txt', 'some text'), read);
    assert.equal(denied.statusCode, 403, denied.body);
    assert.equal(denied.json().code, 'forbidden');
    assert.equal((await t.call('DELETE', '/v1/files/default_keyspace/deletes/other.txt', undefined, read)).statusCode, 403);
    assert.equal((await t.call('GET', '/v1/files/default_keyspace/deletes/other.txt', undefined, read)).statusCode, 200);

    const user = await t.deps.storage.createUser({ name: 'Other', email: `other-${randomUUID()}@example.com` });
    const other = await t.makeKey('Write', ['*'], user.id);
    for (const ks of ['default_keyspace', 'no_such_keyspace']) {
      const res = await upload(t, fileForm('x.txt', 'some text', { keyspace: ks }), other);
      assert.equal(res.statusCode, 404, res.body);
      assert.equal(res.json().code, 'keyspace_not_found');
    }
    assert.equal((await t.call('GET', '/v1/files/default_keyspace/deletes/other.txt', undefined, other)).statusCode, 404);
    assert.equal((await t.call('DELETE', '/v1/files/default_keyspace/deletes/other.txt', undefined, other)).statusCode, 404);
    assert.deepEqual(await listNames(t, other), []);

    // Their own keyspace works, and they see only their own files.
    const created = await t.call('POST', '/v1/keyspaces/create', { keyspace: 'other_ks' }, other);
    assert.equal(created.statusCode, 200, created.body);
    const mine = await upload(t, fileForm('mine.txt', 'Penguins huddle together to survive the antarctic winter.', { keyspace: 'other_ks' }), other);
    assert.equal(mine.statusCode, 200, mine.body);
    assert.deepEqual(mine.json().files, ['mine.txt']);
    assert.deepEqual(await listNames(t, other), ['mine.txt']);
    assert.ok((await listNames(t)).includes('mine.txt'), 'an All key sees every file');

    const scoped = await t.makeKey('Write', ['other_ks'], user.id);
    const outside = await upload(t, fileForm('x.txt', 'some text', { keyspace: 'default_keyspace' }), scoped);
    assert.equal(outside.statusCode, 403, outside.body);
  });

  it('validates the form', async () => {
    const cases: Array<[ReturnType<typeof multipart>, number, string]> = [
      [multipart([{ name: 'table', value: 'x' }]), 400, '/body/file'],
      [multipart([{ name: 'upload', filename: 'a.txt', content: 'text' }]), 400, '/body/upload'],
      [fileForm('a.txt', 'text', { colour: 'blue' }), 400, '/body/colour'],
      [fileForm('a.txt', 'text', { chunk_size: 'big' }), 400, '/body/chunk_size'],
      [fileForm('a.txt', 'text', { chunk_size: '1000' }), 400, '/body/chunk_size'],
      [fileForm('a.txt', 'text', { chunk_size: '64', chunk_overlap: '40' }), 400, '/body/chunk_overlap'],
      [fileForm('a.txt', 'text', { table: 'Bad-Name' }), 400, '/body/table'],
      [fileForm('a.txt', 'text', { model_name: 'no-such-model' }), 400, ''],
      [fileForm('a.txt', '   \n  '), 400, '/file'],
    ];
    for (const [form, status, p] of cases) {
      const res = await upload(t, form);
      assert.equal(res.statusCode, status, res.body);
      if (p) assert.ok(res.json().errors?.some((e: { path: string }) => e.path === p), res.body);
    }
    const mismatch = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'default_keyspace', table: 'small', dimension: 3 });
    assert.equal(mismatch.statusCode, 200, mismatch.body);
    const res = await upload(t, fileForm('a.txt', 'text', { table: 'small' }));
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().code, 'dimension_mismatch');
    assert.deepEqual(await tempUploads(t), []);
  });
});

describe('files: upload limits (fake model)', () => {
  let t: TestApp;
  const limit = 50_000;
  before(async () => (t = await startTestApp({ model: 'fake', limits: { uploadBytes: limit } })));
  after(() => t.close());

  const big = (n: number) => Buffer.from('word '.repeat(Math.ceil(n / 5)).slice(0, n));

  it('answers 413 from Content-Length before reading the body', async () => {
    const res = await upload(t, fileForm('big.txt', big(400_000)));
    assert.equal(res.statusCode, 413, res.body);
    assert.equal(res.json().code, 'payload_too_large');
    assert.equal(res.headers.connection, 'close');
  });

  it('answers 413 while streaming when the file passes the limit', async () => {
    const form = fileForm('big.txt', big(limit + 5_000)); // Content-Length within the framing allowance
    let res = await upload(t, form);
    assert.equal(res.statusCode, 413, res.body);
    // No Content-Length at all: a chunked body.
    const chunks = [form.payload.subarray(0, 1000), form.payload.subarray(1000, 30_000), form.payload.subarray(30_000)];
    res = await upload(t, { headers: form.headers, payload: Readable.from(chunks) });
    assert.equal(res.statusCode, 413, res.body);
    assert.deepEqual(await tempUploads(t), []);
    assert.deepEqual(await contentFiles(t), []);
    assert.deepEqual(await listNames(t), []);
  });

  it('takes a file just under the limit', async () => {
    const res = await upload(t, fileForm('fits.txt', big(limit)));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().file.size, limit);
    assert.deepEqual(res.json().files, ['fits.txt']);
    assert.deepEqual(await tempUploads(t), []);
    assert.equal((await contentFiles(t)).length, 1);
  });

  it('takes one file per request', async () => {
    const res = await upload(t, multipart([{ name: 'file', filename: 'a.txt', content: 'one' }, { name: 'file', filename: 'b.txt', content: 'two' }]));
    assert.equal(res.statusCode, 413, res.body);
    assert.deepEqual(await tempUploads(t), []);
  });

  it('refuses a Read key before reading the body', async () => {
    const read = await t.makeKey('Read');
    const res = await upload(t, fileForm('big.txt', big(400_000)), read);
    assert.equal(res.statusCode, 403, res.body);
  });

  it('reads the keyspace field after the file (FormData and curl -F send it there)', async () => {
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'only_this' })).statusCode, 200);
    const scoped = await t.makeKey('Write', ['only_this']);
    const form = multipart([{ name: 'file', filename: 'late.txt', content: 'Fields after the file.' }, { name: 'keyspace', value: 'only_this' }]);
    const res = await upload(t, form, scoped);
    assert.equal(res.statusCode, 200, res.body);
    // Without a keyspace field the default keyspace is meant, which this key does not reach.
    assert.equal((await upload(t, fileForm('default.txt', 'text'), scoped)).json().code, 'forbidden');
  });

  it('names every bad field of the form in one answer', async () => {
    const forms = [
      fileForm('a.txt', 'text', { keyspace: 'Bad', table: 'Bad-T', chunk_size: 'abc' }),
      multipart([{ name: 'file', filename: 'a.txt', content: 'text' }, { name: 'keyspace', value: 'Bad' }, { name: 'table', value: 'Bad-T' }, { name: 'chunk_size', value: 'abc' }]),
    ];
    for (const form of forms) {
      const res = await upload(t, form);
      assert.equal(res.json().code, 'validation_failed', res.body);
      assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path).sort(), ['/body/chunk_size', '/body/keyspace', '/body/table']);
    }
    const res = await upload(t, fileForm('a.txt', 'text', { foo: '1', bar: '2', model_name: 'nope', chunk_size: '5' }));
    assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path).sort(), ['/body/bar', '/body/chunk_size', '/body/foo', '/body/model_name']);
    const asText = await upload(t, multipart([{ name: 'file', value: 'not a file part' }]));
    assert.deepEqual(asText.json().errors.map((e: { path: string }) => e.path), ['/body/file']);
    assert.deepEqual(await tempUploads(t), []);
  });
});

describe('files: uploads at once, and uploads their client left (fake model, slow where it says)', () => {
  it('holds a plan to its limits when uploads run at the same time', async () => {
    const t = await startTestApp({ model: 'fake', env: { VSS_FREE_MAX_FILE_BYTES: '1000', VSS_FREE_MAX_VECTORS: '6' } });
    try {
      const user = (await t.call('POST', '/v1/user/', { name: 'q', email: 'q@example.com' })).json();
      const key = (await t.call('POST', '/v1/keys/generate', { user_id: user.account_id, permissions: 'Write' })).json().key;
      assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'q_space' }, key)).statusCode, 200);
      const text = (n: number) => 'Harbour notes. '.repeat(Math.ceil(n / 15)).slice(0, n);
      const both = await Promise.all(['a.txt', 'b.txt'].map((name) => upload(t, fileForm(name, text(600), { keyspace: 'q_space' }), key)));
      assert.deepEqual(both.map((r) => r.statusCode).sort(), [200, 403], both.map((r) => r.body.slice(0, 120)).join(' | '));
      // Vector writes too: two batches of 4 new keys against a limit of 6 (one chunk is stored).
      const batches = await Promise.all(['x', 'y'].map((p) => t.call('POST', '/v1/vector/batch', { keyspace: 'q_space', table: 'v', vectors: [0, 1, 2, 3].map((i) => ({ key: `${p}${i}`, vector: [1, i + 1] })) }, key)));
      assert.deepEqual(batches.map((r) => r.statusCode).sort(), [200, 403]);
      assert.ok((await t.call('GET', '/v1/user/', undefined, key)).json().usage.vectors <= 6);
    } finally {
      await t.close();
    }
  });

  it('refuses an upload past the per-user limit of uploads in progress, before reading it, and frees the slot when one ends', async () => {
    const t = await startTestApp({ model: 'fake', fakeDelayMs: 40, limits: { uploadsPerUser: 1 } });
    try {
      const text = Array.from({ length: 600 }, (_, i) => `Sentence ${i} is about ships, harbours and the weather at sea.`).join(' ');
      const model = t.deps.models.get().model as unknown as { callCount: number };
      const before = model.callCount;
      const first = upload(t, fileForm('first.txt', text));
      while (model.callCount < before + 1) await new Promise((r) => setTimeout(r, 5));
      const refused = await upload(t, fileForm('second.txt', 'A short file.'));
      assert.equal(refused.statusCode, 429, refused.body);
      assert.equal(refused.json().code, 'rate_limited');
      assert.equal(refused.headers['retry-after'], '5');
      assert.equal((await first).statusCode, 200);
      const after = await upload(t, fileForm('second.txt', 'A short file.'));
      assert.equal(after.statusCode, 200, after.body);
      assert.deepEqual((await listNames(t)).sort(), ['first.txt', 'second.txt']);
    } finally {
      await t.close();
    }
  });

  it('stops embedding and stores nothing when the client leaves in the middle', async () => {
    const t = await startTestApp({ model: 'fake', fakeDelayMs: 40 });
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = t.app.server.address() as { port: number };
      const text = Array.from({ length: 2000 }, (_, i) => `Sentence ${i} is about ships, harbours and the weather at sea.`).join(' ');
      const form = fileForm('abandoned.txt', text);
      const model = t.deps.models.get().model as unknown as { callCount: number };
      const before = model.callCount;
      const sock = net.connect(port, '127.0.0.1');
      await new Promise((r) => sock.once('connect', r));
      sock.write(`POST /v1/embed/ HTTP/1.1\r\nHost: x\r\nx-api-key: ${ADMIN_KEY}\r\ncontent-type: ${form.headers['content-type']}\r\ncontent-length: ${form.payload.length}\r\n\r\n`);
      sock.write(form.payload);
      while (model.callCount < before + 2) await new Promise((r) => setTimeout(r, 10));
      sock.destroy();
      await new Promise((r) => setTimeout(r, 300));
      const stopped = model.callCount;
      await new Promise((r) => setTimeout(r, 500));
      assert.ok(model.callCount - stopped <= 1, `embedding went on: ${stopped} then ${model.callCount} calls`);
      assert.deepEqual(await listNames(t), []);
    } finally {
      await t.close();
    }
  });
});
