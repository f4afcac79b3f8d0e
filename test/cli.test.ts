import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startServer, type RunningServer } from './server.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin/vss.mjs');
const ADMIN = 'cli-admin-key-0123456789abcdef';

interface Run {
  code: number | null;
  out: string;
  err: string;
}

function vss(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

const hasScript = spawnSync('script', ['--version']).status === 0;

function jsonl(n: number, dim: number): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const v = Array.from({ length: dim }, (_, d) => Math.sin(i * 0.7 + d) + (d === i % dim ? 2 : 0));
    lines.push(JSON.stringify({ key: `row-${i}`, vector: v, metadata: { i, even: i % 2 === 0 } }));
  }
  return `${lines.join('\n')}\n`;
}

describe('the vss command line against a real server', () => {
  let dir: string;
  let server: RunningServer;
  let env: Record<string, string>;
  let serverEnv: Record<string, string>;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'vss-cli-'));
    serverEnv = { VSS_DATA_DIR: path.join(dir, 'data'), VSS_ADMIN_KEY: ADMIN };
    server = await startServer(serverEnv);
    env = { VSS_URL: server.url, VSS_API_KEY: ADMIN, XDG_CONFIG_HOME: path.join(dir, 'config') };
  });
  after(async () => {
    await server.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  const count = async (table: string) => (await server.call('POST', '/v1/vector/count', { keyspace: 'default_keyspace', table })).body.count as number;

  it('imports 10,000 JSONL lines with a progress bar on a terminal, and the counts are right', { skip: hasScript ? false : 'util-linux `script` is absent: no pseudo-terminal' }, async () => {
    const file = path.join(dir, 'tenk.jsonl');
    await writeFile(file, jsonl(10_000, 8));
    // `script` gives the CLI a real pseudo-terminal, as a person at a shell would.
    const cmd = `${process.execPath} ${BIN} import ${file} -t imported --batch 1000`;
    const res = spawnSync('script', ['-qec', cmd, '/dev/null'], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 300_000 });
    assert.equal(res.status, 0, res.stdout + res.stderr);
    assert.match(res.stdout, /█/, 'a progress bar was drawn');
    assert.match(res.stdout, /10000\/10000 records/);
    assert.match(res.stdout, /imported 10000 records into default_keyspace\.imported/);
    assert.equal(await count('imported'), 10_000);
    assert.equal(existsSync(`${file}.vss-import.json`), false, 'no resume state left after success');
  });

  it('resumes an import after the server is killed midway: nothing lost, nothing duplicated', async () => {
    const file = path.join(dir, 'resume.jsonl');
    await writeFile(file, jsonl(10_000, 8));
    const state = `${file}.vss-import.json`;
    const child = spawn(process.execPath, [BIN, 'import', file, '-t', 'resumed', '--batch', '100'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((r) => child.on('close', r));
    // Kill the server once a few batches are acknowledged.
    for (;;) {
      const done = existsSync(state) ? (JSON.parse(await readFile(state, 'utf8').catch(() => '{"done":0}')) as { done: number }).done : 0;
      if (done >= 1000) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await server.kill('SIGKILL');
    const code = await exited;
    assert.equal(code, 5, err);
    assert.match(err, /import stopped/);
    const savedDone = (JSON.parse(await readFile(state, 'utf8')) as { done: number }).done;
    assert.ok(savedDone >= 1000 && savedDone < 10_000, String(savedDone));

    // Back at the same address: saved progress belongs to one server URL (another server would get every record).
    server = await startServer({ ...serverEnv, VSS_PORT: new URL(server.url).port });
    assert.equal(server.url, env.VSS_URL);
    const again = await vss(['import', file, '-t', 'resumed', '--batch', '500'], env);
    assert.equal(again.code, 0, again.err);
    assert.match(again.err, new RegExp(`resuming after record ${savedDone}`));
    assert.match(again.out, new RegExp(`imported ${10_000 - savedDone} records`));
    assert.equal(await count('resumed'), 10_000);
    const exported = await vss(['export', '--rows', '-t', 'resumed', '--no-vectors'], env);
    assert.equal(exported.code, 0, exported.err);
    const keys = exported.out.trim().split('\n').map((l) => (JSON.parse(l) as { key: string }).key);
    assert.equal(keys.length, 10_000);
    assert.equal(new Set(keys).size, 10_000);
  });

  it('sends vectors as float32 bytes: they read back as the file\'s values rounded to float32, and a bad one is named', async () => {
    const file = path.join(dir, 'exact.jsonl');
    const v = [Math.PI, -1 / 3, 1e-40, 0.1, 123456.789, 2 ** -126];
    await writeFile(file, `${JSON.stringify({ key: 'e1', vector: v })}\n${JSON.stringify({ key: 'e2', vector: v.map((x) => -x), text: 'kept' })}\n`);
    const res = await vss(['import', file, '-t', 'exact', '--no-progress'], env);
    assert.equal(res.code, 0, res.err);
    const got = await server.call('POST', '/v1/vector/get', { keyspace: 'default_keyspace', table: 'exact', key: 'e2' });
    assert.deepEqual(got.body.vector, v.map((x) => Math.fround(-x)));
    assert.equal(got.body.text, 'kept');
    const bad = path.join(dir, 'bad.jsonl');
    await writeFile(bad, `${JSON.stringify({ key: 'ok', vector: v })}\n${JSON.stringify({ key: 'huge', vector: [1e39, 1, 1, 1, 1, 1] })}\n`);
    const refused = await vss(['import', bad, '-t', 'exact', '--no-progress', '--restart'], env);
    assert.equal(refused.code, 6, refused.err);
    // Named by the file's line and the field as the file spells it, not the batch index and wire field.
    assert.match(refused.err, /line 2, vector: value 0 is Infinity/);
    assert.doesNotMatch(refused.err, /vector_base64/);
    assert.equal(await count('exact'), 2);
  });

  it('searches by text and prints a readable table, or JSON', async () => {
    const file = path.join(dir, 'docs.jsonl');
    await writeFile(
      file,
      [
        { key: 'cat', text: 'A cat is lying on a sofa.' },
        { key: 'bread', text: 'Knead the dough and bake the bread.' },
        { key: 'stocks', text: 'The stock market fell sharply today.' },
      ].map((r) => JSON.stringify(r)).join('\n'),
    );
    assert.equal((await vss(['import', file, '-t', 'docs', '--no-progress'], env)).code, 0);
    const res = await vss(['search', 'a kitten sleeping on the couch', '-t', 'docs', '-n', '2'], env);
    assert.equal(res.code, 0, res.err);
    const lines = res.out.trim().split('\n');
    assert.match(lines[0], /#\s+score\s+key\s+text/);
    assert.match(lines[1], /^\s+1\s+0\.\d{4}\s+cat\s+A cat is lying on a sofa\./);
    const asJson = await vss(['--json', 'search', 'kitten', '-t', 'docs', '-n', '1'], env);
    assert.equal(JSON.parse(asJson.out).matches[0].key, 'cat');

    // Hybrid: each list's score beside the fused one, "—" for a list without the row.
    const hybrid = await vss(['search', 'bake bread', '-t', 'docs', '-n', '3', '--mode', 'hybrid', '--fusion', 'rrf'], env);
    assert.equal(hybrid.code, 0, hybrid.err);
    const rows = hybrid.out.trim().split('\n');
    assert.match(rows[0], /#\s+score\s+semantic\s+lexical\s+key\s+text/);
    assert.match(rows[1], /^\s+1\s+0\.\d{4}\s+0\.\d{4}\s+\d+\.\d{4}\s+bread\s+Knead the dough/);
    assert.match(rows.slice(2).join('\n'), /^\s+\d\s+0\.\d{4}\s+-?\d\.\d{4}\s+—\s+(cat|stocks)/m);
    // No reranker on this server: the request is refused, saying why (exit 6).
    const rerank = await vss(['search', 'bread', '-t', 'docs', '--rerank'], env);
    assert.equal(rerank.code, 6, rerank.err);
    assert.match(rerank.err, /\/body\/rerank/);
  });

  it('imports CSV with quoted fields, vectors and extra columns as metadata', async () => {
    const file = path.join(dir, 'rows.csv');
    await writeFile(file, 'key,vector,title,note\nc1,"[1,0,0]",First,"has, a comma"\nc2,"0 1 0",Second,plain\n');
    const res = await vss(['import', file, '-t', 'csv_rows', '--no-progress'], env);
    assert.equal(res.code, 0, res.err);
    assert.equal(await count('csv_rows'), 2);
    const got = await server.call('POST', '/v1/vector/get', { keyspace: 'default_keyspace', table: 'csv_rows', key: 'c1' });
    assert.deepEqual(got.body.vector, [1, 0, 0]);
    assert.deepEqual(got.body.metadata, { title: 'First', note: 'has, a comma' });
  });

  it('exits with codes a shell can act on', async () => {
    assert.equal((await vss(['keyspaces'], { ...env, VSS_API_KEY: 'wrong' })).code, 3);
    const missing = await vss(['tables', 'no_such_keyspace'], env);
    assert.equal(missing.code, 4);
    assert.match(missing.err, /does not exist/);
    const bad = await vss(['search', 'x', '-k', 'Bad-Name'], env);
    assert.equal(bad.code, 6);
    assert.match(bad.err, /\/body\/keyspace/);
    assert.equal((await vss(['keyspaces'], { ...env, VSS_URL: 'http://127.0.0.1:9' })).code, 5);
    assert.equal((await vss(['no-such-command'], env)).code, 2);
    assert.equal((await vss(['import', path.join(dir, 'absent.jsonl')], env)).code, 1);
  });

  it('manages keys and reads settings from a config file', async () => {
    const created = await vss(['--json', 'keys', 'create', '--name', 'ci', '--permissions', 'Read'], env);
    assert.equal(created.code, 0, created.err);
    const key = JSON.parse(created.out) as { key: string; key_id: string };
    const configFile = path.join(dir, 'cfg.json');
    await writeFile(configFile, JSON.stringify({ url: server.url, key: key.key }));
    const viaFile = await vss(['--config', configFile, 'keyspaces'], { XDG_CONFIG_HOME: path.join(dir, 'config') });
    assert.equal(viaFile.code, 0, viaFile.err);
    assert.match(viaFile.out, /default_keyspace/);
    const listed = await vss(['keys', 'list'], env);
    assert.match(listed.out, new RegExp(key.key_id));
    assert.equal((await vss(['keys', 'revoke', key.key_id], env)).code, 0);
    assert.equal((await vss(['--config', configFile, 'keyspaces'], {})).code, 3);
  });
});
