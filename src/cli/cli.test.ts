/**
 * The command line against small fake servers in this process: each answers what a test needs
 * (a refusal at a given batch, a proxy's HTML page, no answer at all) and records what it was sent.
 * The CLI runs as the real launcher in a child process, for its exit codes, signals and pipes.
 * test/cli.test.ts runs it against the real server.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { ApiError } from './client.ts';
import { locateBatchError } from './import.ts';
import { readRecords, RecordError, type Format } from './records.ts';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bin/vss.mjs');
const KEY = 'cli-test-key-0123456789';

interface Seen {
  method: string;
  path: string;
  key: string | undefined;
  body: any;
}

type Reply = { status?: number; json?: unknown; html?: string; ndjson?: string } | 'hang';

interface Fake {
  url: string;
  seen: Seen[];
  batches: () => Seen[];
  close(): Promise<void>;
}

/** Answers /v1/env/ as a server taking 1000 records a batch, everything else as `route` says (by default 200 {}). */
async function fakeServer(route: (req: Seen, n: number) => Reply | Promise<Reply> = () => ({ json: {} })): Promise<Fake> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', async () => {
      const s: Seen = { method: req.method!, path: req.url!, key: req.headers['x-api-key'] as string | undefined, body: raw ? JSON.parse(raw) : undefined };
      seen.push(s);
      const reply = s.path === '/v1/env/' ? { json: { limits: { batch_items: 1000 } } } : await route(s, seen.filter((x) => x.path === s.path).length);
      if (reply === 'hang') return;
      if (reply.html !== undefined) res.writeHead(reply.status ?? 200, { 'content-type': 'text/html' }).end(reply.html);
      else if (reply.ndjson !== undefined) res.writeHead(reply.status ?? 200, { 'content-type': 'application/x-ndjson' }).end(reply.ndjson);
      else res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' }).end(JSON.stringify(reply.json ?? {}));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    batches: () => seen.filter((s) => s.path === '/v1/vector/batch'),
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

const problem = (status: number, code: string, errors: { path: string; message: string }[] = []): Reply => ({ status, json: { status, code, detail: errors.map((e) => `${e.path}: ${e.message}`).join('; ') || code, errors } });

let dir: string;
let home: string;

/** The environment of a user with no settings of their own. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VSS_')));
  return { ...env, HOME: home, XDG_CONFIG_HOME: path.join(home, 'config'), ...extra };
}

interface Run {
  code: number | null;
  out: string;
  err: string;
}

function vss(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, [BIN, ...args], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  return collect(child);
}

function collect(child: ReturnType<typeof spawn>): Promise<Run> {
  return new Promise((resolve) => {
    let out = '';
    let err = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (err += d));
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

const at = (server: Fake, ...args: string[]) => ['--url', server.url, '--key', KEY, ...args];

function lines(n: number, prefix = 'r'): string {
  return Array.from({ length: n }, (_, i) => JSON.stringify({ key: `${prefix}${i}`, vector: [i, 1, 2] })).join('\n') + '\n';
}

async function file(name: string, content: string | Buffer): Promise<string> {
  const p = path.join(dir, name);
  await writeFile(p, content);
  return p;
}

async function waitFor(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'vss-cli-unit-'));
  home = path.join(dir, 'home');
  await mkdir(path.join(home, 'config'), { recursive: true });
});
after(() => rm(dir, { recursive: true, force: true }));

describe('import resume', () => {
  it('resumes only against the server the progress was saved for, and never saves the key', async () => {
    const failing = await fakeServer((_req, n) => (n === 1 ? { json: {} } : problem(503, 'unavailable')));
    const other = await fakeServer();
    try {
      const f = await file('resume.jsonl', lines(10));
      const first = await vss(at(failing, 'import', f, '--batch', '3', '--no-progress'));
      assert.equal(first.code, 5, first.err);
      assert.match(first.err, /progress is saved in .*resume\.jsonl\.vss-import\.json/);
      const state = readFileSync(`${f}.vss-import.json`, 'utf8');
      assert.equal(JSON.parse(state).done, 3);
      assert.ok(!state.includes(KEY), 'the key is not saved');

      const elsewhere = await vss(at(other, 'import', f, '--batch', '3', '--no-progress'));
      assert.equal(elsewhere.code, 0, elsewhere.err);
      assert.deepEqual(other.batches().flatMap((b) => b.body.vectors.map((v: { key: string }) => v.key)), Array.from({ length: 10 }, (_, i) => `r${i}`));
    } finally {
      await failing.close();
      await other.close();
    }
  });

  it('still resumes against the same server', async () => {
    let up = false;
    const server = await fakeServer((_req, n) => (n === 1 || up ? { json: {} } : problem(503, 'unavailable')));
    try {
      const f = await file('same.jsonl', lines(10));
      assert.equal((await vss(at(server, 'import', f, '--batch', '4', '--no-progress'))).code, 5);
      up = true;
      const again = await vss(at(server, 'import', f, '--batch', '4', '--no-progress'));
      assert.equal(again.code, 0, again.err);
      assert.match(again.err, /resuming after record 4/);
      assert.equal(server.batches().slice(2).flatMap((b) => b.body.vectors).length, 6);
    } finally {
      await server.close();
    }
  });
});

describe('import records', () => {
  async function refused(name: string, content: string): Promise<Run & { batches: number }> {
    const server = await fakeServer();
    try {
      const res = await vss(at(server, 'import', await file(name, content), '--no-progress'));
      return { ...res, batches: server.batches().length };
    } finally {
      await server.close();
    }
  }

  for (const [what, record] of [
    ['null in a vector', { key: 'a', vector: [1, null, 3] }],
    ['true, "" and [] in a vector', { key: 'a', vector: [true, '', []] }],
    ['a vector that is an object', { key: 'a', vector: { 0: 1 } }],
    ['an object key', { key: { id: 1 }, vector: [1, 1, 1] }],
    ['an array key', { key: ['x'], vector: [1, 1, 1] }],
    ['a number key', { key: 7, vector: [1, 1, 1] }],
    ['a text that is not a string', { key: 'a', text: 12 }],
    ['a string vector that is not JSON', { key: 'a', vector: '[1,2' }],
    ['a string vector with a word in it', { key: 'a', vector: '1, x, 3' }],
    ['string metadata that is not JSON', { key: 'a', vector: [1, 2, 3], metadata: '{oops' }],
  ] as const) {
    it(`refuses ${what}, naming its line, before sending its batch (exit 6)`, async () => {
      // Two blank lines before it: line 4 is record 2.
      const res = await refused('bad.jsonl', `${JSON.stringify({ key: 'ok', vector: [1, 2, 3] })}\n\n\n${JSON.stringify(record)}\n`);
      assert.equal(res.code, 6, res.err);
      assert.match(res.err, /line 4: /);
      assert.equal(res.batches, 0, 'nothing was sent');
      assert.doesNotMatch(res.err, /progress is saved/);
    });
  }

  it('accepts string keys, string vectors from CSV cells and exported rows with null text', async () => {
    const server = await fakeServer();
    try {
      const f = await file('fine.jsonl', [{ key: 'a', vector: [1.5, -2, 3e-3] }, { key: 'b', vector: '[1, 2, 3]' }, { key: 'c', vector: '1 2 3', text: null, metadata: {} }].map((r) => JSON.stringify(r)).join('\n'));
      const res = await vss(at(server, 'import', f, '--no-progress'));
      assert.equal(res.code, 0, res.err);
      assert.deepEqual(server.batches()[0].body.vectors.map((v: { key: string }) => v.key), ['a', 'b', 'c']);
    } finally {
      await server.close();
    }
  });

  it('reports a malformed line by its line number, blank lines included', async () => {
    const res = await refused('blank.jsonl', `${lines(1)}\n\n${lines(1, 's')}{"key":"c","vector":[1,2,\n`);
    assert.equal(res.code, 6, res.err);
    assert.match(res.err, /line 5: not valid JSON/);
  });

  it('reads a JSONL file that starts with a byte order mark', async () => {
    const server = await fakeServer();
    try {
      const f = await file('bom.jsonl', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lines(2))]));
      const res = await vss(at(server, 'import', f, '--no-progress'));
      assert.equal(res.code, 0, res.err);
      assert.equal(server.batches()[0].body.vectors[0].key, 'r0');
    } finally {
      await server.close();
    }
  });

  async function wheres(name: string, content: string, format: Format): Promise<string[]> {
    const out: string[] = [];
    try {
      for await (const r of readRecords(await file(name, content), format)) out.push(r.where);
    } catch (e) {
      out.push(`error ${(e as RecordError).where}`);
    }
    return out;
  }

  it('numbers CSV rows by the line they start on, across quoted line breaks', async () => {
    const csv = 'key,vector,note\na,"[1,2]","two\nlines"\n\nb,"1 2",x\nc,"1 nope",y\n';
    assert.deepEqual(await wheres('rows.csv', csv, 'csv'), ['line 2', 'line 5', 'error line 6']);
  });

  it('names the records the server refuses by file line and the field the user wrote', async () => {
    const server = await fakeServer((req, n) => (n === 2 ? problem(400, 'dimension_mismatch', [{ path: '/body/vectors/1/vector_base64', message: 'has 2 dimensions; table holds 3' }, { path: '/body/vectors/2/metadata/x', message: 'too long' }]) : { json: {} }));
    try {
      // Batches of 3; the blank line makes the second batch lines 4, 6 and 7.
      const f = await file('server.jsonl', `${lines(3)}${lines(1, 's')}\n${lines(2, 't')}`);
      const res = await vss(at(server, 'import', f, '--batch', '3', '--no-progress'));
      assert.equal(res.code, 6, res.err);
      assert.match(res.err, /line 6, vector: has 2 dimensions/);
      assert.match(res.err, /line 7, metadata\/x: too long/);
      assert.doesNotMatch(res.err, /\/body\/vectors|vector_base64/);
      assert.doesNotMatch(res.err, /progress is saved/, 're-running stops at the same record');
    } finally {
      await server.close();
    }
  });

  it('translates batch paths in the detail and the field list alike', () => {
    const err = locateBatchError(new ApiError(400, 'x', '/body/vectors/0/vector_base64: bad; /body/vectors/12: worse; /body/vectors: too many', [{ path: '/body/vectors/12', message: 'worse' }]), Array.from({ length: 13 }, (_, i) => `line ${i + 10}`));
    assert.equal(err.detail, 'line 10, vector: bad; line 22: worse; /body/vectors: too many');
    assert.deepEqual(err.fieldErrors, [{ path: 'line 22', message: 'worse' }]);
  });
});

describe('import failures', () => {
  it('offers to resume only when progress was saved and a re-run can get further', async () => {
    const down = await fakeServer(() => problem(503, 'unavailable'));
    try {
      const missing = await vss(at(down, 'import', path.join(dir, 'absent.jsonl')));
      assert.equal(missing.code, 1);
      const beforeFirstBatch = await vss(at(down, 'import', await file('first.jsonl', lines(2)), '--no-progress'));
      assert.equal(beforeFirstBatch.code, 5);
      for (const r of [missing, beforeFirstBatch]) assert.doesNotMatch(r.err, /progress is saved/);
    } finally {
      await down.close();
    }
  });

  it('checks --batch before reading the file or sending anything (exit 2)', async () => {
    const server = await fakeServer();
    try {
      const f = await file('batch.jsonl', lines(3));
      for (const bad of ['abc', '0', '-1', '2.5']) {
        const res = await vss(at(server, 'import', f, '--batch', bad));
        assert.equal(res.code, 2, `${bad}: ${res.err}`);
        assert.match(res.err, /--batch/);
      }
      const tooBig = await vss(at(server, 'import', f, '--batch', '5000'));
      assert.equal(tooBig.code, 2, tooBig.err);
      assert.match(tooBig.err, /1000/);
      assert.equal(server.batches().length, 0);
      const unknown = await vss(at(server, 'import', await file('data.bin', 'x')));
      assert.equal(unknown.code, 2, unknown.err);
      assert.doesNotMatch(unknown.err, /progress is saved/);
    } finally {
      await server.close();
    }
  });

  it('stops on SIGINT after the saved batch, says so, and exits 130', async () => {
    const server = await fakeServer((_req, n) => (n === 1 ? { json: {} } : 'hang'));
    try {
      const f = await file('sigint.jsonl', lines(6));
      const child = spawn(process.execPath, [BIN, ...at(server, 'import', f, '--batch', '2', '--no-progress')], { env: cleanEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
      const result = collect(child);
      await waitFor(() => server.batches().length === 2, 'the second batch');
      child.kill('SIGINT');
      const res = await result;
      assert.equal(res.code, 130, res.err);
      assert.match(res.err, /progress is saved in .*sigint\.jsonl\.vss-import\.json/);
      assert.equal(JSON.parse(readFileSync(`${f}.vss-import.json`, 'utf8')).done, 2);
    } finally {
      await server.close();
    }
  });

  const hasScript = process.platform === 'linux' && spawnSync('script', ['--version']).status === 0;
  it('shows the cursor again when stopped on a terminal', { skip: hasScript ? false : 'util-linux `script` is absent: no pseudo-terminal' }, async () => {
    const server = await fakeServer((_req, n) => (n === 1 ? { json: {} } : 'hang'));
    try {
      const f = await file('tty.jsonl', lines(6));
      const pidFile = path.join(dir, 'tty.pid');
      // `script` gives the CLI a terminal; the shell writes the pid the CLI then runs as (exec).
      const cmd = `echo $$ > ${pidFile}; exec ${process.execPath} ${BIN} ${at(server, 'import', f, '--batch', '2').join(' ')}`;
      const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: cleanEnv({}), stdio: ['pipe', 'pipe', 'pipe'] });
      const result = collect(child);
      await waitFor(() => server.batches().length === 2 && existsSync(pidFile), 'the second batch');
      process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGINT');
      const res = await result;
      assert.equal(res.code, 130, res.out);
      assert.match(res.out, /\x1b\[\?25l/, 'the bar hid the cursor');
      assert.match(res.out, /\x1b\[\?25h/, 'and it is shown again');
      assert.match(res.out, /progress is saved/);
    } finally {
      await server.close();
    }
  });
});

describe('export', () => {
  const row = (key: string) => ({ key, vector: [1, 2, 3], metadata: {} });

  it('streams -o into a temporary file beside the target and renames it when complete', async () => {
    const target = path.join(dir, 'exp', 'backup.jsonl');
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, 'the old backup\n');
    let duringExport: string[] = [];
    const server = await fakeServer(async (_req, n) => {
      if (n === 1) return { json: { vectors: [row('a'), row('b')], cursor: 'next' } };
      // The first page reaches a file beside the target while the export waits for this page, and
      // the old backup stays untouched. The CLI may ask for this page before its write stream has
      // flushed the first one, so the files are read until the page is there (2 s at most).
      const read = async () => {
        const names = await readdir(path.dirname(target));
        return Promise.all(names.map(async (name) => `${name}=${await readFile(path.join(path.dirname(target), name), 'utf8')}`));
      };
      for (let waited = 0; ; waited += 20) {
        duringExport = await read();
        if (duringExport.some((s) => /"b"/.test(s)) || waited >= 2000) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      return { json: { vectors: [row('c')], cursor: null } };
    });
    try {
      const res = await vss(at(server, 'export', '--rows', '-o', target));
      assert.equal(res.code, 0, res.err);
      assert.ok(duringExport.includes('backup.jsonl=the old backup\n'), duringExport.join('|'));
      assert.ok(duringExport.some((s) => /^\.backup\.jsonl\.\d+\.tmp=.*"a".*\n.*"b".*\n$/.test(s)), duringExport.join('|'));
      assert.deepEqual((await readFile(target, 'utf8')).trim().split('\n').map((l) => JSON.parse(l).key), ['a', 'b', 'c']);
      assert.deepEqual(await readdir(path.dirname(target)), ['backup.jsonl']);
    } finally {
      await server.close();
    }
  });

  it('leaves the old file as it was when the export fails midway', async () => {
    const target = path.join(dir, 'exp2', 'backup.jsonl');
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, 'the old backup\n');
    const server = await fakeServer((_req, n) => (n === 1 ? { json: { vectors: [row('a')], cursor: 'next' } } : problem(500, 'internal')));
    try {
      const res = await vss(at(server, 'export', '--rows', '-o', target));
      assert.equal(res.code, 1, res.err);
      assert.equal(await readFile(target, 'utf8'), 'the old backup\n');
      assert.deepEqual(await readdir(path.dirname(target)), ['backup.jsonl'], 'no temporary file left');
    } finally {
      await server.close();
    }
  });

  it('writes the export format from /v1/export to -o, and keeps no file when the stream lacks its end line', async () => {
    const header = '{"format":"vss-export","version":1,"keyspace":"ks","tables":["t"]}\n{"type":"table","table":"t","dimension":3,"metric":"cosine","model":null,"lexical":{"tokenizer":"porter"}}\n';
    const whole = `${header}{"type":"end","tables":1,"rows":0,"metadata":0,"files":0}\n`;
    let answer = whole;
    const server = await fakeServer(() => ({ ndjson: answer }));
    const target = path.join(dir, 'exp3', 'ks.jsonl');
    await mkdir(path.dirname(target), { recursive: true });
    try {
      const ok = await vss(at(server, 'export', '-k', 'ks', '-t', 't', '-o', target));
      assert.equal(ok.code, 0, ok.err);
      assert.equal(server.seen.at(-1)!.path, '/v1/export?keyspace=ks&table=t');
      assert.equal(await readFile(target, 'utf8'), whole);
      answer = header; // a server that stopped midway
      const cut = await vss(at(server, 'export', '-k', 'ks', '-o', target));
      assert.equal(cut.code, 5, cut.err);
      assert.match(cut.err, /stopped before its end/);
      assert.equal(await readFile(target, 'utf8'), whole, 'the earlier export kept');
      assert.deepEqual(await readdir(path.dirname(target)), ['ks.jsonl']);
    } finally {
      await server.close();
    }
  });

  it('stops quietly with 0 when the reader closes the pipe (| head)', async () => {
    let page = 0;
    // An endless table: only the closed pipe ends this export.
    const server = await fakeServer(() => ({ json: { vectors: Array.from({ length: 200 }, () => row(`k${page++}`)), cursor: 'more' } }));
    try {
      const child = spawn(process.execPath, [BIN, ...at(server, 'export', '--rows')], { env: cleanEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
      const result = collect(child);
      child.stdout!.once('data', () => child.stdout!.destroy());
      const res = await result;
      assert.equal(res.code, 0, res.err);
      assert.equal(res.err, '');
    } finally {
      await server.close();
    }
  });
});

describe('search', () => {
  const HYBRID_ANSWER = {
    query: 'refund policy',
    matches: [
      { key: 'billing/refunds', score: 0.0325, scores: { semantic: 0.8123, lexical: 7.25 }, metadata: { text: 'Refunds are issued within 14 days.' } },
      { key: 'billing/invoices', score: 0.0161, scores: { semantic: 0.5012, lexical: null }, metadata: { text: 'Invoices are emailed monthly.' } },
      { key: 'faq/returns', score: 0.0159, scores: { semantic: null, lexical: 3.5 }, metadata: { text: 'Returns: see the refund policy.' } },
    ],
    note: 'The reranker did not answer within 5000 ms; the matches are in their fused order.',
  };

  it('sends the mode, fusion, MMR and rerank fields, and shows the per-list scores and the note', async () => {
    const server = await fakeServer(() => ({ json: HYBRID_ANSWER }));
    try {
      const res = await vss(at(server, 'search', 'refund policy', '-t', 'docs', '-n', '3', '--mode', 'hybrid', '--fusion', 'rrf', '--k', '20', '--mmr', '0.4', '--mmr-candidates', '30', '--rerank'));
      assert.equal(res.code, 0, res.err);
      assert.deepEqual(server.seen.at(-1)!.body, {
        query: 'refund policy',
        keyspace: 'default_keyspace',
        table: 'docs',
        final_top_k: 3,
        mode: 'hybrid',
        fusion: { method: 'rrf', k: 20 },
        mmr: { diversity: 0.4, candidates: 30 },
        rerank: true,
      });
      const rows = res.out.trim().split('\n');
      assert.match(rows[0]!, /score\s+semantic\s+lexical\s+key\s+text/);
      assert.match(rows[1]!, /^\s+1\s+0\.0325\s+0\.8123\s+7\.2500\s+billing\/refunds\s+Refunds are issued/);
      assert.match(rows[2]!, /^\s+2\s+0\.0161\s+0\.5012\s+—\s+billing\/invoices/);
      assert.match(rows[3]!, /^\s+3\s+0\.0159\s+—\s+3\.5000\s+faq\/returns/);
      assert.match(res.err, /^note: The reranker did not answer within 5000 ms/m);
      assert.doesNotMatch(res.out, /note/);
    } finally {
      await server.close();
    }
  });

  it('names the fusion constant for a bare --fusion, and implies the method from --k or --alpha', async () => {
    const server = await fakeServer(() => ({ json: { matches: [] } }));
    try {
      const cases: [string[], unknown][] = [
        [['--fusion', 'rrf'], { method: 'rrf' }],
        [['--fusion', 'relative'], { method: 'relative' }],
        [['--alpha', '0.25'], { method: 'relative', alpha: 0.25 }],
        [['--k', '5'], { method: 'rrf', k: 5 }],
        [[], undefined],
      ];
      for (const [flags, fusion] of cases) {
        const res = await vss(at(server, 'search', 'q', '--mode', 'hybrid', ...flags));
        assert.equal(res.code, 0, res.err);
        assert.deepEqual(server.seen.at(-1)!.body.fusion, fusion, flags.join(' '));
        assert.equal(res.out.trim(), '(no matches)');
      }
    } finally {
      await server.close();
    }
  });

  it('sends the search effort: --candidates as initial_top_k and --ef', async () => {
    const server = await fakeServer(() => ({ json: { matches: [] } }));
    try {
      const res = await vss(at(server, 'search', 'q', '-n', '3', '--candidates', '50', '--ef', '256'));
      assert.equal(res.code, 0, res.err);
      assert.deepEqual(server.seen.at(-1)!.body, { query: 'q', keyspace: 'default_keyspace', table: 'vector', final_top_k: 3, initial_top_k: 50, ef: 256 });
      const bad = await vss(at(server, 'search', 'q', '--ef', '0'));
      assert.equal(bad.code, 2);
      assert.match(bad.err, /--ef/);
    } finally {
      await server.close();
    }
  });

  it('sends none of the new fields unless asked, and keeps the plain table for answers without per-list scores', async () => {
    const server = await fakeServer(() => ({ json: { matches: [{ key: 'k1', score: 0.75, metadata: { text: 'hello' } }] } }));
    try {
      const res = await vss(at(server, 'search', 'hello', '--mmr', '0'));
      assert.equal(res.code, 0, res.err);
      assert.deepEqual(server.seen.at(-1)!.body, { query: 'hello', keyspace: 'default_keyspace', table: 'vector', final_top_k: 5, mmr: { diversity: 0 } });
      assert.doesNotMatch(res.out, /semantic|lexical/);
      assert.match(res.out, /^\s+1\s+0\.7500\s+k1\s+hello$/m);
      assert.equal(res.err, '');
      const asJson = await vss(at(server, '--json', 'search', 'hello', '--mode', 'lexical'));
      assert.equal(server.seen.at(-1)!.body.mode, 'lexical');
      assert.equal(JSON.parse(asJson.out).matches[0].key, 'k1');
    } finally {
      await server.close();
    }
  });
});

describe('usage errors and settings', () => {
  it('exits 2, before any request, for bad flags and settings', async () => {
    const server = await fakeServer();
    try {
      const cases: [string[], Record<string, string>, RegExp?][] = [
        [at(server, 'search', 'x', '--filter', '{bad'), {}, /--filter/],
        [at(server, 'search', 'x', '--filter', '[1]'), {}, /--filter/],
        [at(server, 'search', 'x', '-n', 'abc'), {}, /--top/],
        [at(server, 'search', 'x', '--mode', 'fuzzy'), {}, /--mode/],
        [at(server, 'search', 'x', '--mode', 'hybrid', '--alpha', '1.5'), {}, /--alpha/],
        [at(server, 'search', 'x', '--mode', 'hybrid', '--fusion', 'relative', '--k', '10'), {}, /--k is for --fusion rrf/],
        [at(server, 'search', 'x', '--mode', 'hybrid', '--k', '10', '--alpha', '0.3'), {}, /give one/],
        [at(server, 'search', 'x', '--fusion', 'rrf'), {}, /--fusion rrf applies to --mode hybrid only/],
        [at(server, 'search', 'x', '--mode', 'lexical', '--alpha', '0.2'), {}, /--alpha applies to --mode hybrid only/],
        [at(server, 'search', 'x', '--mmr', '-0.1'), {}, /--mmr/],
        [at(server, 'search', 'x', '--mmr-candidates', '50'), {}, /--mmr-candidates needs --mmr/],
        [at(server, '--timeout', 'soon', 'keyspaces'), {}, /--timeout/],
        [['--config', path.join(dir, 'missing.json'), 'keyspaces'], {}],
        [['--url', 'not-a-url', 'keyspaces'], {}],
        [['--url', 'ftp://example.com', 'keyspaces'], {}],
        [['--url', server.url, '--key', 'sécret', 'keyspaces'], {}, /key cannot be sent/],
        [['--url', server.url, 'keyspaces'], { VSS_API_KEY: 'two words' }, /key cannot be sent/],
      ];
      for (const [args, env, message] of cases) {
        const res = await vss(args, env);
        assert.equal(res.code, 2, `${args.join(' ')}: ${res.err}`);
        if (message) assert.match(res.err, message);
        assert.doesNotMatch(res.err, /sécret|two words/, 'the key is not echoed');
      }
      assert.deepEqual(server.seen, []);
    } finally {
      await server.close();
    }
  });

  it('reports an unreadable default config file instead of ignoring it', async () => {
    const xdg = path.join(dir, 'badconfig');
    await mkdir(path.join(xdg, 'vss'), { recursive: true });
    await writeFile(path.join(xdg, 'vss', 'config.json'), '{"url": ');
    const res = await vss(['keyspaces'], { XDG_CONFIG_HOME: xdg });
    assert.equal(res.code, 2, res.err);
    assert.match(res.err, /config\.json/);
  });

  it('treats an empty VSS_API_KEY or VSS_URL as unset', async () => {
    const server = await fakeServer(() => ({ json: { keyspaces: [] } }));
    try {
      const xdg = path.join(dir, 'goodconfig');
      await mkdir(path.join(xdg, 'vss'), { recursive: true });
      await writeFile(path.join(xdg, 'vss', 'config.json'), JSON.stringify({ url: server.url, key: KEY }));
      const res = await vss(['keyspaces'], { XDG_CONFIG_HOME: xdg, VSS_API_KEY: '', VSS_URL: '' });
      assert.equal(res.code, 0, res.err);
      assert.equal(server.seen[0].key, KEY);
    } finally {
      await server.close();
    }
  });

  it('keeps --key out of the process command line', { skip: process.platform === 'linux' ? false : 'reads /proc' }, async () => {
    const server = await fakeServer(() => 'hang');
    try {
      const secret = 'very-secret-key-in-argv-0123456789';
      const child = spawn(process.execPath, [BIN, '--url', server.url, '--key', secret, 'keyspaces'], { env: cleanEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
      const result = collect(child);
      await waitFor(() => server.seen.length === 1, 'the request');
      const cmdline = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8');
      child.kill('SIGTERM');
      await result;
      assert.ok(!cmdline.includes(secret), JSON.stringify(cmdline));
      assert.match(cmdline, /^vss keyspaces/);
    } finally {
      await server.close();
    }
  });
});

describe('an unavailable server', () => {
  it('exits 5 when a proxy answers 502 with an HTML page', async () => {
    const server = await fakeServer(() => ({ status: 502, html: '<html><body>502 Bad Gateway</body></html>' }));
    try {
      for (const command of [['health'], ['keyspaces']]) {
        const res = await vss(at(server, ...command));
        assert.equal(res.code, 5, res.err);
        assert.match(res.err, /502/);
        assert.doesNotMatch(res.err, /Unexpected token/);
      }
    } finally {
      await server.close();
    }
  });

  it('exits 5 when the server is not ready, and prints its health', async () => {
    const server = await fakeServer(() => ({ status: 503, json: { status: 'unavailable', checks: { storage: 'ok', model: 'loading' } } }));
    try {
      const res = await vss(at(server, 'health'));
      assert.equal(res.code, 5, res.err);
      assert.match(res.out, /model: loading/);
    } finally {
      await server.close();
    }
  });

  it('gives up on a server that accepts and never answers (--timeout), with exit 5', async () => {
    const server = await fakeServer(() => 'hang');
    try {
      const started = Date.now();
      const res = await vss(at(server, '--timeout', '0.5', 'keyspaces'));
      assert.equal(res.code, 5, res.err);
      assert.match(res.err, /did not answer within 0\.5 s/);
      assert.ok(Date.now() - started < 10_000);
    } finally {
      await server.close();
    }
  });
});
