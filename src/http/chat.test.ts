import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { chatCompletion, completionsUrl, LlmError } from '../service/chat-llm.ts';
import { splitSentences } from '../service/chat.ts';
import { ADMIN_KEY, startTestApp, type TestApp } from './testing.ts';

interface Source { keyspace: string; table: string; key: string; score: number; source_file: string | null }
interface ChatAnswer { query: string; mode: string; response: string; sources: Source[]; note?: string; data?: Record<string, any> }

const LIGHTHOUSE = [
  'The Skerryvore lighthouse stands on a reef far off the west coast of Scotland.',
  'It was built between 1838 and 1844 from granite quarried on the island of Mull.',
  '',
  'In 1890 the principal keeper kept a small garden of herbs in crates on the rocks.',
  "The keeper's cat was named Marmalade, and she slept beside the great lamp every night.",
  'Supplies arrived by boat every two weeks, whenever the sea allowed a landing.',
].join('\n');

const TEXTS = [
  { key: 'eiffel', text: "The Eiffel Tower was completed in 1889 as the entrance arch to the World's Fair in Paris. It is about 330 metres tall and made of wrought iron." },
  { key: 'photosynthesis', text: 'Photosynthesis converts light energy into chemical energy in plants. It takes place in the chloroplasts, which contain chlorophyll.' },
  { key: 'rust', text: 'Rust is a systems programming language focused on memory safety. Its compiler enforces ownership and borrowing rules at compile time.' },
  { key: 'bread', text: 'Sourdough bread rises because of wild yeast and lactic acid bacteria. The starter must be fed with flour and water regularly.' },
];

/** A multipart/form-data body: fields first, then the file in `file`. */
function multipart(fields: Record<string, string>, file: { name: string; content: string }) {
  const boundary = `----vss-chat-test-${Math.random().toString(16).slice(2)}`;
  const parts: string[] = [];
  for (const [k, v] of Object.entries(fields)) parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
  parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: text/plain\r\n\r\n${file.content}\r\n`);
  parts.push(`--${boundary}--\r\n`);
  return { payload: Buffer.from(parts.join(''), 'utf8'), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/** Parses a server-sent events body into [event, data] pairs. */
function parseSse(body: string): { event: string; data: any }[] {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      return { event, data: JSON.parse(data) };
    });
}

async function seed(t: TestApp, keyspace: string) {
  assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace })).statusCode, 200);
  const res = await t.call('POST', '/v1/vector/batch', { keyspace, table: 'vector', vectors: TEXTS });
  assert.equal(res.statusCode, 200, res.body);
}

// Real model: the answers are checked for meaning.
describe('POST /v1/chat/: commands and extractive answers (real model)', () => {
  let t: TestApp;
  let chat: (body: Record<string, unknown>, key?: string | null) => Promise<ChatAnswer & { statusCode: number; raw: string }>;

  before(async () => {
    t = await startTestApp({ model: 'real' });
    chat = async (body, key = ADMIN_KEY) => {
      const res = await t.call('POST', '/v1/chat/', body, key);
      const answer = (res.statusCode === 200 ? res.json() : {}) as ChatAnswer;
      return { ...answer, statusCode: res.statusCode, raw: res.body };
    };
    await seed(t, 'library');
    const form = multipart({ keyspace: 'library' }, { name: 'lighthouse.txt', content: LIGHTHOUSE });
    const up = await t.app.inject({ method: 'POST', url: '/v1/embed/', headers: { 'x-api-key': ADMIN_KEY, ...form.headers }, payload: form.payload });
    assert.equal(up.statusCode, 200, up.body);
    assert.ok(up.json().files.includes('lighthouse.txt'), up.body);
  });
  after(() => t?.close());

  it('/help lists every command', async () => {
    const a = await chat({ query: '/help' });
    assert.equal(a.statusCode, 200, a.raw);
    assert.equal(a.mode, 'command');
    for (const c of ['/help', '/files', '/keyspaces', '/tables', '/search']) assert.ok(a.response.includes(c), `${c} in ${a.response}`);
    assert.equal(a.data!.commands.length, 5);
    assert.deepEqual(a.sources, []);
  });

  it('/keyspaces lists the caller\'s keyspaces with their tables', async () => {
    const a = await chat({ query: '/keyspaces' });
    assert.equal(a.statusCode, 200, a.raw);
    assert.match(a.response, /library: vector \(\d+ rows\)/);
    assert.match(a.response, /default_keyspace/);
    assert.deepEqual(a.data!.keyspaces.map((k: { keyspace: string }) => k.keyspace).sort(), ['default_keyspace', 'library']);
  });

  it('/tables [keyspace] lists tables of the named, given or default keyspace', async () => {
    const named = await chat({ query: '/tables library' });
    assert.equal(named.statusCode, 200, named.raw);
    assert.equal(named.data!.keyspace, 'library');
    // Four texts and the file's one chunk.
    assert.deepEqual(named.data!.tables.map((x: { table: string; row_count: number }) => [x.table, x.row_count]), [['vector', 5]]);
    assert.match(named.response, /vector: 5 rows, 384 dimensions, cosine/);
    assert.equal((await chat({ query: '/tables', keyspace: 'library' })).data!.keyspace, 'library');
    assert.equal((await chat({ query: '/tables' })).data!.keyspace, 'default_keyspace');
    const missing = await chat({ query: '/tables nosuch' });
    assert.equal(missing.statusCode, 404);
    assert.equal(JSON.parse(missing.raw).code, 'keyspace_not_found');
    assert.equal((await chat({ query: '/tables Not-A-Name' })).statusCode, 400);
  });

  it('/files lists the uploaded files', async () => {
    const a = await chat({ query: '/files' });
    assert.equal(a.statusCode, 200, a.raw);
    assert.match(a.response, /library\/vector: lighthouse\.txt \(txt, \d+ bytes, 1 chunks\)/);
    assert.deepEqual(a.data!.files.map((f: { keyspace: string; name: string }) => [f.keyspace, f.name]), [['library', 'lighthouse.txt']]);
    const inDefault = await chat({ query: '/files', keyspace: 'default_keyspace' });
    assert.equal(inDefault.response, 'No files have been uploaded yet.');
  });

  it('/search <text> answers the nearest passages with their sources', async () => {
    const a = await chat({ query: '/search tall iron tower in Paris', keyspace: 'library' });
    assert.equal(a.statusCode, 200, a.raw);
    assert.equal(a.mode, 'command');
    assert.equal(a.data!.matches[0].key, 'eiffel');
    assert.equal(a.sources[0].key, 'eiffel');
    assert.equal(a.sources[0].source_file, null);
    assert.match(a.response.split('\n')[1], /^1\. \[[01]\.\d{3}\] vector\/eiffel: The Eiffel Tower/);
    const usage = await chat({ query: '/search' });
    assert.match(usage.response, /^Usage: \/search <text>/);
  });

  it('answers an unknown command with the list of commands', async () => {
    const a = await chat({ query: '/frobnicate now' });
    assert.equal(a.statusCode, 200, a.raw);
    assert.equal(a.mode, 'command');
    assert.match(a.response, /^Unknown command \/frobnicate\..*\/help/);
  });

  it('answers a question from an uploaded file, with the file among the sources', async () => {
    const a = await chat({ query: "What was the name of the lighthouse keeper's cat?", keyspace: 'library' });
    assert.equal(a.statusCode, 200, a.raw);
    assert.equal(a.mode, 'extractive');
    assert.match(a.response, /Marmalade/);
    assert.ok(!/Eiffel|sourdough|Rust/i.test(a.response), a.response);
    assert.ok(a.sources.some((s) => s.source_file === 'lighthouse.txt' && s.key === 'lighthouse.txt#0' && s.keyspace === 'library'), JSON.stringify(a.sources));
    // Only the passages the answer came from are sources.
    assert.ok(a.sources.every((s) => a.response.length > 0 && s.score > 0));
    assert.equal(a.note, undefined);
  });

  it('answers a question from written texts, sentences in passage order', async () => {
    const a = await chat({ query: 'When was the Eiffel Tower finished?', keyspace: 'library' });
    assert.equal(a.statusCode, 200, a.raw);
    assert.match(a.response, /completed in 1889/);
    assert.equal(a.sources[0].key, 'eiffel');
    assert.ok(!/sourdough|chloroplast/i.test(a.response), a.response);
    const b = await chat({ query: 'Where does photosynthesis happen in a plant?', keyspace: 'library' });
    assert.match(b.response, /chloroplasts/);
    assert.equal(b.sources[0].key, 'photosynthesis');
  });

  it('says so when nothing is stored', async () => {
    assert.equal((await t.call('POST', '/v1/keyspaces/create', { keyspace: 'empty_shelf' })).statusCode, 200);
    const a = await chat({ query: 'What is the capital of France?', keyspace: 'empty_shelf' });
    assert.equal(a.statusCode, 200, a.raw);
    assert.match(a.response, /^Nothing stored in keyspace empty_shelf/);
    assert.deepEqual(a.sources, []);
    // Stored passages that do not answer are not an answer either.
    const unrelated = await chat({ query: 'Who won the football world cup in 2010?', keyspace: 'library' });
    assert.equal(unrelated.response, 'Nothing stored in keyspace library answers this closely enough.');
    assert.deepEqual(unrelated.sources, []);
  });

  it('streams server-sent events when asked (body or accept header)', async () => {
    const query = "What was the name of the lighthouse keeper's cat?";
    const plain = await chat({ query, keyspace: 'library' });
    const viaBody = await t.call('POST', '/v1/chat/', { query, keyspace: 'library', stream: true });
    const viaAccept = await t.app.inject({ method: 'POST', url: '/v1/chat/', headers: { 'x-api-key': ADMIN_KEY, accept: 'text/event-stream' }, payload: { query, keyspace: 'library' } });
    for (const res of [viaBody, viaAccept]) {
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^text\/event-stream/);
      assert.ok(res.headers['x-request-id']);
      const events = parseSse(res.body);
      const deltas = events.filter((e) => e.event === 'delta');
      const done = events.at(-1)!;
      assert.ok(deltas.length >= 2, res.body);
      assert.equal(done.event, 'done');
      assert.equal(deltas.map((d) => d.data.text).join(''), plain.response);
      assert.equal(done.data.response, plain.response);
      assert.deepEqual(done.data.sources, plain.sources);
    }
    // stream: false wins over the accept header; errors are plain problem bodies.
    const off = await t.app.inject({ method: 'POST', url: '/v1/chat/', headers: { 'x-api-key': ADMIN_KEY, accept: 'text/event-stream' }, payload: { query: '/help', stream: false } });
    assert.match(String(off.headers['content-type']), /^application\/json/);
    const err = await t.call('POST', '/v1/chat/', { query: '/tables nosuch', stream: true });
    assert.equal(err.statusCode, 404);
    assert.match(String(err.headers['content-type']), /^application\/problem\+json/);
  });

  it('keeps tenants apart: another user\'s keyspace is missing, /help still works', async () => {
    const other = await t.deps.storage.createUser({ name: 'Other', email: 'chat-other@example.com' });
    const key = await t.makeKey('Read', ['*'], other.id);
    const q = await chat({ query: 'Who is the keeper?', keyspace: 'library' }, key);
    assert.equal(q.statusCode, 404);
    assert.equal(JSON.parse(q.raw).code, 'keyspace_not_found');
    // The default keyspace is the administrator's.
    assert.equal((await chat({ query: 'Who is the keeper?' }, key)).statusCode, 404);
    assert.equal((await chat({ query: '/tables library' }, key)).statusCode, 404);
    assert.equal((await chat({ query: '/search keeper', keyspace: 'library' }, key)).statusCode, 404);
    assert.equal((await chat({ query: '/help' }, key)).statusCode, 200);
    const files = await chat({ query: '/files' }, key);
    assert.deepEqual(files.data!.files, []);
    const ks = await chat({ query: '/keyspaces' }, key);
    assert.deepEqual(ks.data!.keyspaces, []);
    // A key limited to other keyspaces: 403 when it names one outside them.
    const limited = await t.makeKey('Read', ['elsewhere']);
    assert.equal((await chat({ query: 'x', keyspace: 'library' }, limited)).statusCode, 403);
    assert.equal((await chat({ query: '/tables library' }, limited)).statusCode, 403);
    assert.equal((await chat({ query: '/help' }, null)).statusCode, 401);
  });

  it('validates the body', async () => {
    for (const body of [{}, { query: '' }, { query: '   ' }, { query: 'x', keyspace: 'Bad' }, { query: 'x', other: 1 }, { query: 'x', stream: 'yes' }]) {
      const res = await t.call('POST', '/v1/chat/', body);
      assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
      assert.equal(res.json().code, 'validation_failed');
    }
  });
});

type StubMode = 'ok' | 'slow' | 'error' | 'malformed' | 'nochoices' | 'hold';

// Real model behind the extractive fallback; the chat endpoint is a stub started here.
describe('POST /v1/chat/ with an OpenAI-compatible endpoint (stub server)', () => {
  let t: TestApp;
  let stub: http.Server;
  let mode: StubMode = 'ok';
  const received: { url: string; headers: http.IncomingHttpHeaders; body: any }[] = [];
  /** Answers of calls made in 'hold' mode, sent when the test says. */
  const held: (() => void)[] = [];
  const ANSWER = 'According to the passages, the Eiffel Tower was completed in 1889.';
  const question = { query: 'When was the Eiffel Tower finished?', keyspace: 'library' };

  before(async () => {
    stub = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (d) => (raw += d));
      req.on('end', () => {
        received.push({ url: req.url ?? '', headers: req.headers, body: JSON.parse(raw) });
        const json = (status: number, body: string) => {
          if (res.destroyed) return;
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(body);
        };
        switch (mode) {
          case 'ok':
            return json(200, JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: ANSWER }, finish_reason: 'stop' }] }));
          case 'hold':
            return void held.push(() => json(200, JSON.stringify({ choices: [{ message: { role: 'assistant', content: ANSWER } }] })));
          case 'slow':
            return void setTimeout(() => json(200, JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'too late' } }] })), 1500);
          case 'error':
            return json(500, JSON.stringify({ error: { message: 'boom' } }));
          case 'malformed':
            return json(200, '{"choices": [ this is not json');
          case 'nochoices':
            return json(200, JSON.stringify({ object: 'chat.completion', choices: [] }));
        }
      });
    });
    await new Promise<void>((r) => stub.listen(0, '127.0.0.1', r));
    const { port } = stub.address() as net.AddressInfo;
    t = await startTestApp({
      model: 'real',
      env: { VSS_CHAT_URL: `http://127.0.0.1:${port}/v1`, VSS_CHAT_MODEL: 'stub-model', VSS_CHAT_API_KEY: 'sk-stub-secret', VSS_CHAT_TIMEOUT_MS: '300' },
    });
    await seed(t, 'library');
  });
  after(async () => {
    await t?.close();
    stub?.closeAllConnections();
    await new Promise((r) => stub?.close(r));
  });

  const ask = async (body: Record<string, unknown> = question) => {
    const res = await t.call('POST', '/v1/chat/', body);
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as ChatAnswer;
  };

  let llmSources: Source[];

  it('writes the answer with the endpoint, from the passages, with the same sources', async () => {
    mode = 'ok';
    received.length = 0;
    const a = await ask();
    assert.equal(a.mode, 'llm');
    assert.equal(a.response, ANSWER);
    assert.equal(a.note, undefined);
    assert.equal(a.sources[0].key, 'eiffel');
    llmSources = a.sources;

    assert.equal(received.length, 1);
    const call = received[0];
    assert.equal(call.url, '/v1/chat/completions');
    assert.equal(call.headers.authorization, 'Bearer sk-stub-secret');
    assert.equal(call.body.model, 'stub-model');
    const user = call.body.messages.at(-1);
    assert.equal(user.role, 'user');
    assert.match(user.content, /completed in 1889/);
    assert.match(user.content, /Question: When was the Eiffel Tower finished\?/);
    assert.equal(call.body.messages[0].role, 'system');
  });

  for (const [failure, note] of [
    ['slow', /did not answer within 300 ms/],
    ['error', /answered HTTP 500/],
    ['malformed', /not JSON/],
    ['nochoices', /without a message/],
  ] as [StubMode, RegExp][]) {
    it(`falls back to the extractive answer with a note when the endpoint is ${failure}`, async () => {
      mode = failure;
      const started = Date.now();
      const a = await ask();
      assert.equal(a.mode, 'extractive');
      assert.match(a.note ?? '', note);
      assert.match(a.note ?? '', /extracted from the stored passages/);
      assert.match(a.response, /completed in 1889/);
      assert.deepEqual(a.sources, llmSources);
      if (failure === 'slow') assert.ok(Date.now() - started < 1400, `took ${Date.now() - started} ms`);
    });
  }

  it('streams the written answer', async () => {
    mode = 'ok';
    const res = await t.call('POST', '/v1/chat/', { ...question, stream: true });
    assert.equal(res.statusCode, 200, res.body);
    const events = parseSse(res.body);
    assert.equal(events.filter((e) => e.event === 'delta').map((e) => e.data.text).join(''), ANSWER);
    assert.equal(events.at(-1)!.data.mode, 'llm');
    assert.deepEqual(events.at(-1)!.data.sources, llmSources);
  });

  it('does not call the endpoint for commands', async () => {
    mode = 'ok';
    received.length = 0;
    const a = await ask({ query: '/help' });
    assert.equal(a.mode, 'command');
    assert.equal(received.length, 0);
  });

  it('answers extractively at once while VSS_CHAT_MAX_CONCURRENT calls are with the endpoint', async () => {
    const { port } = stub.address() as net.AddressInfo;
    const one = await startTestApp({ model: 'real', env: { VSS_CHAT_URL: `http://127.0.0.1:${port}/v1`, VSS_CHAT_TIMEOUT_MS: '20000', VSS_CHAT_MAX_CONCURRENT: '1' } });
    try {
      await seed(one, 'library');
      mode = 'hold';
      received.length = 0;
      const first = one.call('POST', '/v1/chat/', question);
      while (received.length === 0) await new Promise((r) => setTimeout(r, 10));
      const busy = (await one.call('POST', '/v1/chat/', question)).json() as ChatAnswer;
      assert.equal(busy.mode, 'extractive');
      assert.match(busy.note ?? '', /busy/);
      assert.match(busy.response, /completed in 1889/);
      assert.equal(received.length, 1, 'the second question did not reach the endpoint');
      held.splice(0).forEach((send) => send());
      const written = (await first).json() as ChatAnswer;
      assert.equal(written.mode, 'llm');
      assert.equal(written.response, ANSWER);
      // The slot is back: the next question is written again.
      mode = 'ok';
      assert.equal(((await one.call('POST', '/v1/chat/', question)).json() as ChatAnswer).mode, 'llm');
    } finally {
      held.splice(0).forEach((send) => send());
      await one.close();
    }
  });

  it('reports an unreachable endpoint as an LlmError, and builds the completions URL', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as net.AddressInfo;
    await new Promise((r) => probe.close(r));
    await assert.rejects(chatCompletion({ url: `http://127.0.0.1:${port}/v1`, timeoutMs: 2000 }, [{ role: 'user', content: 'hi' }]), (e) => {
      assert.ok(e instanceof LlmError);
      assert.match(e.message, /could not be reached/);
      return true;
    });
    await assert.rejects(chatCompletion({ url: 'not a url', timeoutMs: 100 }, []), LlmError);
    assert.equal(completionsUrl('http://h:1/v1'), 'http://h:1/v1/chat/completions');
    assert.equal(completionsUrl('http://h:1/v1/'), 'http://h:1/v1/chat/completions');
    assert.equal(completionsUrl('http://h:1/v1/chat/completions'), 'http://h:1/v1/chat/completions');
    assert.equal(completionsUrl('https://h/openai/deployments/x/chat/completions?api-version=1'), 'https://h/openai/deployments/x/chat/completions?api-version=1');
  });
});

describe('splitSentences', () => {
  it('splits on sentence ends, paragraphs and list items, keeping abbreviation-free text whole', () => {
    assert.deepEqual(splitSentences('One sentence here. Another one! A third?\n\nNew paragraph without end'), [
      'One sentence here.',
      'Another one!',
      'A third?',
      'New paragraph without end',
    ]);
    assert.deepEqual(splitSentences('Intro line\n- first item\n- second item\n\n12'), ['Intro line', '- first item', '- second item']);
    assert.deepEqual(splitSentences('Version 2.5 is out. it continues lower-case.'), ['Version 2.5 is out. it continues lower-case.']);
  });
});
