import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { childCommands, makePdf } from '../src/ingest/fixtures.ts';
import { startServer, type RunningServer } from './server.ts';

const ADMIN = 'extract-bundle-admin-key-0123456789';

describe('the bundled server (npm start) reads uploads in its extraction process', () => {
  let dir: string;
  let server: RunningServer;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'vss-extract-'));
    server = await startServer({ VSS_DATA_DIR: path.join(dir, 'data'), VSS_ADMIN_KEY: ADMIN });
  });
  after(async () => {
    await server?.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('uploads a PDF: its text comes from dist/server/extract.worker.mjs', async () => {
    const form = new FormData();
    form.append('table', 'bundle');
    form.append('file', new Blob([new Uint8Array(await makePdf([['The harbour master keeps the tide tables.']]))]), 'tides.pdf');
    const res = await fetch(`${server.url}/v1/embed/`, { method: 'POST', headers: { 'x-api-key': ADMIN }, body: form });
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as { file: { method: string; chunks: number } };
    assert.equal(body.file.method, 'pdf:unpdf');
    assert.equal(body.file.chunks, 1);
    // The process that read it stays idle for the next file: it is the bundle's worker module.
    const workers = childCommands(server.child.pid!).filter((c) => c.includes('extract.worker'));
    assert.equal(workers.length, 1, childCommands(server.child.pid!).join('\n'));
    assert.match(workers[0], /dist\/server\/extract\.worker\.mjs/);
  });
});
