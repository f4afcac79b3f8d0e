/**
 * Moving a keyspace with `vss export` and `vss import` (the CLI against listening servers):
 * embedded → Cassandra → embedded (the Cassandra hop with VSS_TEST_CASSANDRA=1, as the other
 * Cassandra tests; without it embedded → embedded), compared row by row, record by record, file by
 * file and by search answers, with no model call during the imports (the fake model counts its
 * calls). Expiries travel too (a table's default TTL, rows' and records' own); the Cassandra hop
 * keeps them to the second (its TTLs are whole seconds), so they are compared within 5 s.
 * A cut-off export is refused before anything is written. Fake embedder: no meaning claimed.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { run } from '../cli/main.ts';
import type { MetadataRecord, VectorRow } from '../storage/api.ts';
import { ADMIN_KEY, multipart, startTestApp, type TestApp } from './testing.ts';

const CASSANDRA = process.env.VSS_TEST_CASSANDRA === '1';
const KS = 'moved';
const DIM = 24;
// Enough words that two rows rarely tie on BM25 (equal scores may come in either order: the order of rowids).
const WORDS = Array.from({ length: 300 }, (_, i) => `w${i.toString(36)}x`);
const randomVector = (): number[] => Array.from({ length: DIM }, () => Math.random() * 2 - 1);
const randomText = (): string => Array.from({ length: 2 + randomInt(6) }, () => WORDS[randomInt(WORDS.length)]).join(' ');

async function listening(storage: 'embedded' | 'cassandra', env: Record<string, string> = {}): Promise<{ t: TestApp; url: string }> {
  const t = await startTestApp({ model: 'fake', fakeDimension: DIM, storage, env });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = t.app.server.address() as { port: number };
  return { t, url: `http://127.0.0.1:${addr.port}` };
}

async function cli(url: string, args: string[], key = ADMIN_KEY): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await run(['--url', url, '--key', key, ...args], { out: (s) => void (out += s), err: (s) => void (err += s), stdout: new PassThrough(), env: {}, isTTY: false });
  return { code, out, err };
}

/** Everything a keyspace holds, in a stable order, as plain values; expiries (ms) apart, by row and record. */
async function contents(t: TestApp) {
  const s = t.deps.storage;
  const tables = (await s.listTables(KS)).map((x) => ({ name: x.name, dimension: x.dimension, metric: x.metric, model: x.model, lexical: x.lexical, rows: x.rowCount })).sort((a, b) => a.name.localeCompare(b.name));
  const defaultTtls = Object.fromEntries(await Promise.all(tables.map(async (x) => [x.name, await s.getDefaultTtl(KS, x.name)] as const)));
  const expiries: Record<string, number | null> = {};
  const rows: Record<string, { key: string; vector: number[]; text: string | null; metadata: unknown }[]> = {};
  const records: Record<string, MetadataRecord[]> = {};
  for (const table of tables) {
    const all: VectorRow[] = [];
    let cursor: string | null = null;
    do {
      const page: { rows: VectorRow[]; cursor: string | null } = await s.scanVectors(KS, table.name, { cursor, limit: 200 });
      all.push(...page.rows);
      cursor = page.cursor;
    } while (cursor !== null);
    rows[table.name] = all.map((r) => ({ key: r.key, vector: Array.from(r.vector), text: r.text, metadata: r.metadata })).sort((a, b) => (a.key < b.key ? -1 : 1));
    for (const r of all) expiries[`row ${table.name}/${r.key}`] = r.expiresAt ?? null;
    const recs: MetadataRecord[] = [];
    cursor = null;
    do {
      const page: { records: MetadataRecord[]; cursor: string | null } = await s.scanMetadata(KS, table.name, { cursor, limit: 200 });
      recs.push(...page.records);
      cursor = page.cursor;
    } while (cursor !== null);
    for (const r of recs) expiries[`record ${table.name}/${r.source_file}`] = r.expires_at ?? null;
    records[table.name] = recs.map(({ expires_at: _e, ...r }) => r).sort((a, b) => (a.source_file < b.source_file ? -1 : 1));
  }
  const files = [];
  for (const f of await s.listFiles([KS])) {
    const { createdAt, ...rest } = f;
    files.push({ ...rest, createdAt, content: (await s.readFileContent(KS, f.table, f.name))!.toString('base64') });
  }
  return { tables, defaultTtls, rows, records, files, expiries };
}

type Contents = Awaited<ReturnType<typeof contents>>;

/** The same keyspace: equal in everything, expiries within 5 s (and never where never). */
function assertSameContents(got: Contents, want: Contents, where: string): void {
  const { expiries: e1, ...rest1 } = got;
  const { expiries: e2, ...rest2 } = want;
  assert.deepEqual(rest1, rest2, where);
  assert.deepEqual(Object.keys(e1).sort(), Object.keys(e2).sort(), where);
  for (const [k, v] of Object.entries(e2)) {
    if (v === null) assert.equal(e1[k], null, `${where}: ${k} never expires`);
    else assert.ok(e1[k] !== null && Math.abs(e1[k]! - v) <= 5000, `${where}: ${k} expires at ${e1[k]} against ${v}`);
  }
}

type Match = { key: string; score: number };
/**
 * An answer with its ties put in key order: rows of equal score come in the order of their
 * internal ids, which an import does not keep. Every score must be the same, and every key but
 * those tied with the last score (which of them made the cut is that same internal order).
 */
function untied(matches: Match[]): { scores: number[]; keys: string[] } {
  const sorted = [...matches].sort((x, y) => y.score - x.score || (x.key < y.key ? -1 : 1));
  const last = sorted.at(-1)?.score;
  return { scores: sorted.map((m) => m.score), keys: sorted.filter((m) => m.score !== last).map((m) => m.key) };
}

/** The same random searches, by vector (plain and filtered) and by words, on each table. */
function searches(n: number) {
  return Array.from({ length: n }, (_, i) => {
    const table = i % 2 === 0 ? 'docs' : 'notes';
    if (i % 3 === 2) return { keyspace: KS, table, query: randomText(), mode: 'lexical', final_top_k: 8 };
    return { keyspace: KS, table, vector: randomVector(), final_top_k: 8, ...(i % 3 === 1 ? { filter: { group: i % 4 } } : {}) };
  });
}

describe(`moving a keyspace: embedded → ${CASSANDRA ? 'Cassandra' : 'embedded'} → embedded with vss export and vss import`, () => {
  const apps: TestApp[] = [];
  let work: string;

  before(async () => {
    work = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-migration-test-'));
  });
  after(async () => {
    for (const t of apps) await t.close();
    await fs.rm(work, { recursive: true, force: true });
  });

  it('gives the same rows, records, files and search answers, with no model call', async () => {
    const a = await listening('embedded');
    apps.push(a.t);
    assert.equal((await a.t.call('POST', '/v1/keyspaces/create', { keyspace: KS })).statusCode, 200);
    assert.equal((await a.t.call('POST', '/v1/keyspaces/table/create', { keyspace: KS, table: 'notes', dimension: DIM, metric: 'euclidean', lexical: { tokenizer: 'trigram' }, default_ttl_seconds: 86_400 })).statusCode, 200);
    for (const table of ['docs', 'notes']) {
      for (let i = 0; i < 600; i += 200) {
        const vectors = Array.from({ length: 200 }, (_, j) => ({
          key: `${table}-${i + j}`,
          vector: randomVector(),
          ...((i + j) % 7 === 0 ? {} : { text: randomText() }),
          metadata: { group: (i + j) % 4, nested: { tag: `t${(i + j) % 3}` }, ...((i + j) % 50 === 0 ? { source_file: `source-${i + j}.txt` } : {}) },
          // Own TTLs on some rows, "never" (over the notes table's default) on others.
          ...((i + j) % 5 === 1 ? { ttl_seconds: 3600 + i + j } : (i + j) % 5 === 2 ? { ttl_seconds: null } : {}),
        }));
        assert.equal((await a.t.call('POST', '/v1/vector/batch', { keyspace: KS, table, vectors })).statusCode, 200);
      }
    }
    const records = Array.from({ length: 12 }, (_, i) => ({ keyspace: KS, table: 'docs', source_file: `source-${i * 50}.txt`, raw_value: `raw ${i}`, source_type: 'txt', processing_details: JSON.stringify({ i }), ...(i % 3 === 0 ? { ttl_seconds: 7200 } : {}) }));
    assert.equal((await a.t.call('POST', '/v1/metadata/batch', { records })).statusCode, 200);
    for (const [name, content] of [['harbour.md', '# Harbour\n\nThe lantern on the granite pier was lit at dusk.'], ['orchard.txt', 'Copper pans hung in the orchard kitchen. '.repeat(200)]]) {
      const form = multipart([{ name: 'keyspace', value: KS }, { name: 'table', value: 'docs' }, { name: 'file', filename: name, content }]);
      assert.equal((await a.t.app.inject({ method: 'POST', url: '/v1/embed/', headers: { ...form.headers, 'x-api-key': ADMIN_KEY }, payload: form.payload })).statusCode, 200);
    }
    const source = await contents(a.t);
    assert.equal(source.files.length, 2);
    assert.equal(source.defaultTtls.notes, 86_400);
    assert.equal(source.defaultTtls.docs, null);
    const expiring = Object.values(source.expiries).filter((v) => v !== null).length;
    assert.ok(expiring > 300 && expiring < Object.keys(source.expiries).length, `${expiring} of the rows and records expire`);
    assert.ok(source.files.every((f) => f.chunks > 0));

    // embedded → the middle server
    const exported = path.join(work, 'first.jsonl');
    const e1 = await cli(a.url, ['export', '-k', KS, '-o', exported]);
    assert.equal(e1.code, 0, e1.err);
    const b = await listening(CASSANDRA ? 'cassandra' : 'embedded');
    apps.push(b.t);
    const i1 = await cli(b.url, ['--json', 'import', exported, '--batch', '150']);
    assert.equal(i1.code, 0, i1.err);
    assert.equal(b.t.fakeModel!.calls.length, 0, 'the import called no model');
    if (CASSANDRA) {
      // The cluster's own snapshots are its backup (docs/CASSANDRA.md).
      const snap = await b.t.call('POST', '/v1/snapshots');
      assert.equal(snap.statusCode, 501);
      assert.equal(snap.json().code, 'not_supported');
    }
    assertSameContents(await contents(b.t), source, 'the middle server');

    // the middle server → embedded again
    const second = path.join(work, 'second.jsonl');
    const e2 = await cli(b.url, ['export', '-k', KS, '-o', second]);
    assert.equal(e2.code, 0, e2.err);
    const c = await listening('embedded');
    apps.push(c.t);
    const i2 = await cli(c.url, ['import', second]);
    assert.equal(i2.code, 0, i2.err);
    assert.equal(c.t.fakeModel!.calls.length, 0, 'the import called no model');
    assertSameContents(await contents(c.t), source, 'back on embedded');

    for (const [i, body] of searches(120).entries()) {
      const want = (await a.t.call('POST', '/v1/search/', body)).json();
      assert.ok(want.matches.length > 0, JSON.stringify(want));
      const got = (await c.t.call('POST', '/v1/search/', body)).json().matches as Match[];
      assert.deepEqual(untied(got), untied(want.matches), `embedded → embedded, search ${i}`);
      // Rows with their metadata and text, as the source answered them.
      const byKey = new Map(want.matches.map((m: Match) => [m.key, m]));
      for (const m of got) if (byKey.has(m.key)) assert.deepEqual(m, byKey.get(m.key));
      const mid = untied((await b.t.call('POST', '/v1/search/', body)).json().matches as Match[]);
      const ref = untied(want.matches);
      // Another engine computes the same scores in its own order of operations: same rows, scores within float32 rounding.
      assert.deepEqual(mid.keys, ref.keys, `middle, search ${i}`);
      mid.scores.forEach((x, j) => assert.ok(Math.abs(x - ref.scores[j]) < 1e-4, `middle, search ${i}, match ${j}: ${x} vs ${ref.scores[j]}`));
    }
  });

  it('refuses a cut-off or damaged export before writing anything, and resumes an interrupted import', async () => {
    const a = apps[0];
    const exported = path.join(work, 'first.jsonl');
    const text = await fs.readFile(exported, 'utf8');
    const lines = text.trimEnd().split('\n');
    const target = await listening('embedded');
    apps.push(target.t);
    const cut = path.join(work, 'cut.jsonl');
    await fs.writeFile(cut, `${lines.slice(0, -3).join('\n')}\n`);
    const r1 = await cli(target.url, ['import', cut]);
    assert.equal(r1.code, 6, r1.err);
    assert.match(r1.err, /cut off/);
    const damaged = path.join(work, 'damaged.jsonl');
    await fs.writeFile(damaged, `${[...lines.slice(0, 5), lines[5].slice(0, 40), ...lines.slice(6)].join('\n')}\n`);
    const r2 = await cli(target.url, ['import', damaged]);
    assert.equal(r2.code, 6, r2.err);
    assert.match(r2.err, /line 6/);
    assert.equal((await target.t.call('GET', '/v1/keyspaces/list')).json().keyspaces.some((k: { keyspace: string }) => k.keyspace === KS), false, 'nothing written');

    // A batch refused midway (the owner's plan is full): the batches before it are kept and saved as
    // progress; once the plan has room, the same command goes on from there.
    const small = await listening('embedded', { VSS_FREE_MAX_VECTORS: '700' });
    apps.push(small.t);
    const user = await small.t.deps.storage.createUser({ name: 'Mover', email: 'mover@example.com' });
    const key = await small.t.makeKey('Write', ['*'], user.id);
    const r3 = await cli(small.url, ['import', exported, '--batch', '100'], key);
    assert.equal(r3.code, 6, r3.err);
    assert.match(r3.err, /quota_exceeded/);
    const state = JSON.parse(await fs.readFile(`${exported}.vss-import.json`, 'utf8'));
    assert.ok(state.done > 0 && state.done < lines.length - 2, `progress saved: ${state.done}`);
    await small.t.deps.storage.setUserPlan(user.id, 'pro');
    const r4 = await cli(small.url, ['--json', 'import', exported, '--batch', '100'], key);
    assert.equal(r4.code, 0, r4.err);
    assert.equal(JSON.parse(r4.out).resumedFrom, state.done);
    assert.equal(small.t.fakeModel!.calls.length, 0);
    assertSameContents(await contents(small.t), await contents(a), 'resumed');
  });
});
