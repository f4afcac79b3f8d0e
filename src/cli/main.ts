/**
 * The `vss` command line: a client of the HTTP API (plus `serve`, which starts the server).
 * Exit codes a script can act on: 0 done, 1 unexpected, 2 usage, 3 key refused (401/403),
 * 4 not found, 5 server unreachable or not ready (502/503/504, timeout), 6 request rejected
 * (400/409/413/415/429, or a bad record in an import file); 130/143 import stopped by SIGINT/SIGTERM.
 */
import { createWriteStream, openAsBlob } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Command, CommanderError, Option } from 'commander';
import { ApiError, Client, LONG_TIMEOUT_MS, UnavailableError } from './client.ts';
import { Interrupted, UsageError } from './errors.ts';
import { ImportStopped, importFile } from './import.ts';
import { importExport, isExportFile } from './portable.ts';
import { positiveInteger, positiveSeconds } from './options.ts';
import { RecordError } from './records.ts';
import { resolveSettings } from './settings.ts';
import { addSearchOptions, searchRequest, searchTable, type SearchOptions } from './search.ts';
import { addSnapshotCommands } from './snapshots.ts';
import { ArchiveError } from '../platform/snapshot-archive.ts';

export const EXIT = { ok: 0, unexpected: 1, usage: 2, auth: 3, notFound: 4, unavailable: 5, rejected: 6 } as const;

function exitCodeOf(err: unknown): number {
  if (err instanceof ImportStopped) return exitCodeOf(err.reason);
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof UnavailableError) return EXIT.unavailable;
  if (err instanceof Interrupted) return err.exitCode;
  if (err instanceof ApiError) {
    if (err.status === 401 || (err.status === 403 && err.code !== 'quota_exceeded')) return EXIT.auth;
    if (err.status === 404) return EXIT.notFound;
    if (err.status === 502 || err.status === 503 || err.status === 504) return EXIT.unavailable;
    if (err.status >= 400 && err.status < 500) return EXIT.rejected;
  }
  if (err instanceof RecordError || err instanceof ArchiveError) return EXIT.rejected;
  return EXIT.unexpected;
}

function describe(err: unknown): string {
  if (err instanceof ImportStopped) return describe(err.reason);
  if (err instanceof ApiError) {
    const hint = err.status === 401 ? ' (set --key, VSS_API_KEY, or "key" in the config file)' : '';
    const fields = err.fieldErrors.map((f) => `\n  ${f.path}: ${f.message}`).join('');
    return `${err.detail} [HTTP ${err.status} ${err.code}]${hint}${fields}`;
  }
  return (err as Error)?.message ?? String(err);
}

/**
 * The export goes to a temporary file beside the target, renamed over it only when complete and
 * on disk: a failed export leaves the previous backup as it was, never a truncated one. The pipeline
 * writes each page as it comes (waiting while the disk is behind), so no table is held in memory.
 */
async function writeFileAtomically(file: string, chunks: AsyncIterable<string | Uint8Array>): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    await pipeline(chunks, createWriteStream(tmp, { flags: 'wx' }));
    const fh = await open(tmp, 'r+');
    await fh.sync().finally(() => fh.close());
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

/** Ctrl-C or a kill during an import aborts the request in flight, so the progress bar is stopped (it hid the cursor) and the saved progress reported. */
function abortOnSignals(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const handlers = (['SIGINT', 'SIGTERM'] as const).map((sig) => {
    const handler = () => controller.abort(new Interrupted(sig));
    process.once(sig, handler);
    return () => process.off(sig, handler);
  });
  return { signal: controller.signal, dispose: () => handlers.forEach((off) => off()) };
}

export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  /** Where `export` streams its lines (with backpressure, which `out` has not). */
  stdout: Writable;
  env: NodeJS.ProcessEnv;
  isTTY: boolean;
}

export function buildProgram(io: Io): Command {
  const program = new Command('vss')
    .description('vss: vector search and storage — a client of the HTTP API')
    .option('--url <url>', 'server URL (env VSS_URL; default http://127.0.0.1:8080)')
    .option('--key <key>', 'API key (scripts: prefer env VSS_API_KEY or the config file, which stay out of the shell history)')
    .option('--config <file>', 'config file with {"url", "key"} (default ~/.config/vss/config.json)')
    .option('--timeout <seconds>', 'give up on a request after this long (default 60; 600 for uploads and import batches)', positiveSeconds)
    .option('--json', 'print JSON instead of tables')
    .showHelpAfterError()
    .exitOverride();
  program.configureOutput({ writeOut: io.out, writeErr: io.err });

  const client = (): Client => {
    const o = program.opts<{ url?: string; key?: string; config?: string; timeout?: number }>();
    const s = resolveSettings(o, io.env);
    return new Client(s.url, s.key, o.timeout === undefined ? undefined : o.timeout * 1000);
  };
  const json = (): boolean => program.opts<{ json?: boolean }>().json === true;
  const print = (value: unknown, human: () => string): void => io.out(`${json() ? JSON.stringify(value, null, 2) : human()}\n`);
  const ks = (c: Command): Command => c.addOption(new Option('-k, --keyspace <name>', 'keyspace').default('default_keyspace'));
  const tb = (c: Command): Command => c.addOption(new Option('-t, --table <name>', 'table').default('vector'));

  const commands: Commands = { io, client, json, print, ks, tb, writeAtomically: writeFileAtomically };
  addServerCommands(program, commands);
  addKeyspaceCommands(program, commands);
  addSearchCommand(program, commands);
  addDataCommands(program, commands);
  addKeyCommands(program, commands);
  addEmbedCommand(program, commands);
  addSnapshotCommands(program, commands);
  return program;
}

/** What every command's action uses: the settings' client, and output as a table or JSON. */
export interface Commands {
  io: Io;
  client: () => Client;
  json: () => boolean;
  print: (value: unknown, human: () => string) => void;
  /** Adds the -k/--keyspace and -t/--table options. */
  ks: (c: Command) => Command;
  tb: (c: Command) => Command;
  /** Writes a file whole or not at all (temp file, fsync, rename). */
  writeAtomically: (file: string, chunks: AsyncIterable<string | Uint8Array>) => Promise<void>;
}

/** One table of a keyspace listing. */
const tableLine = (t: any): string => `${t.table.padEnd(24)} ${String(t.row_count).padStart(10)} rows  ${t.dimension}-d ${t.metric}`;

/** serve, health. */
function addServerCommands(program: Command, { client, print }: Commands): void {
  program
    .command('serve')
    .description('start the server (settings from the environment, as `npm start`)')
    .action(async () => {
      // The same entry as `npm start`: the bundled server, rebuilt first if src/ changed.
      await import(new URL('../../scripts/start.mjs', import.meta.url).href);
      await new Promise(() => {}); // the server runs until a signal
    });

  program
    .command('health')
    .description("the server's health")
    .action(async () => {
      // A server that is not ready answers 503 with the same body: print it, then exit 5.
      const res = await client().send('GET', '/v1/healthcheck/');
      const body = res.body as { status?: string; checks?: Record<string, string> } | null;
      if (res.status !== 200 && res.status !== 503) throw new ApiError(res.status, `http_${res.status}`, `unexpected answer to the health check`);
      print(body, () => `${body?.status}  (${Object.entries(body?.checks ?? {}).map(([k, v]) => `${k}: ${v}`).join(', ')})`);
      if (res.status !== 200) throw new ApiError(res.status, 'not_ready', `server is ${body?.status}`);
    });
}

/** keyspaces (list, create), tables. */
function addKeyspaceCommands(program: Command, { client, print }: Commands): void {
  const keyspaces = program.command('keyspaces').description('list or create keyspaces');
  keyspaces
    .command('list', { isDefault: true })
    .description('the keyspaces this key reaches, with their tables')
    .action(async () => {
      const res = await client().get('/v1/keyspaces/list');
      print(res, () =>
        res.keyspaces
          .map((k: any) => `${k.keyspace}\n${k.tables.map((t: any) => `  ${tableLine(t)}`).join('\n')}`)
          .join('\n') || '(no keyspaces)',
      );
    });
  keyspaces
    .command('create [name]')
    .description('create a keyspace (a unique name when none is given)')
    .action(async (name?: string) => {
      const res = await client().post('/v1/keyspaces/create', name ? { keyspace: name } : {});
      print(res, () => `created ${res.keyspace}`);
    });

  program
    .command('tables <keyspace>')
    .description('the tables of a keyspace')
    .action(async (name: string) => {
      const res = await client().get('/v1/keyspaces/list');
      const k = res.keyspaces.find((x: any) => x.keyspace === name);
      if (!k) throw new ApiError(404, 'keyspace_not_found', `Keyspace "${name}" does not exist.`);
      print(k.tables, () => k.tables.map((t: any) => tableLine(t)).join('\n') || '(no tables)');
    });
}

/** search by text: semantic, lexical or hybrid. */
function addSearchCommand(program: Command, { io, client, json, print, ks, tb }: Commands): void {
  addSearchOptions(tb(ks(program.command('search <text>'))))
    .description('search by text: by meaning (semantic), by words (lexical) or both (hybrid)')
    .action(async (text: string, o: SearchOptions) => {
      const res = await client().post('/v1/search/', searchRequest(text, o));
      print(res, () => searchTable(res.matches, process.stdout.columns || 100));
      // The server's word on how the answer was made (a reranker that failed, for one): beside, not in, the table.
      if (typeof res.note === 'string' && !json()) io.err(`note: ${res.note}\n`);
    });
}

/** upload, import, export. */
function addDataCommands(program: Command, { io, client, json, print, ks, tb }: Commands): void {
  tb(ks(program.command('upload <files...>')))
    .description('upload files to be extracted, chunked and embedded')
    .action(async (files: string[], o: { keyspace: string; table: string }) => {
      const c = client();
      const results = [];
      for (const file of files) {
        const form = new FormData();
        form.append('keyspace', o.keyspace);
        form.append('table', o.table);
        form.append('file', await openAsBlob(file), path.basename(file));
        const res = await c.request('POST', '/v1/embed/', { raw: form, timeoutMs: LONG_TIMEOUT_MS });
        results.push(res);
        if (!json()) io.out(`uploaded ${file}: ${res.file?.chunks ?? '?'} chunks\n`);
      }
      if (json()) io.out(`${JSON.stringify(results, null, 2)}\n`);
    });

  tb(ks(program.command('import <file>')))
    .description('bulk vectors or texts from .jsonl, .csv or .parquet, or a keyspace written by `vss export` (into the keyspace it came from unless -k is given); resumable')
    .option('--batch <n>', 'records per request', positiveInteger, 500)
    .option('--model <name>', 'embedding model for records given as text')
    .option('--restart', 'ignore an earlier interrupted run and start from the first record')
    .option('--no-progress', 'no progress bar')
    .action(async (file: string, o: { keyspace: string; table: string; batch: number; restart?: boolean; progress: boolean; model?: string }, cmd: Command) => {
      const interrupt = abortOnSignals();
      try {
        if (await isExportFile(file)) {
          const keyspace = cmd.getOptionValueSource('keyspace') === 'default' ? undefined : o.keyspace;
          const s = await importExport(client(), file, { keyspace, batch: o.batch, restart: o.restart === true, progress: o.progress && io.isTTY, signal: interrupt.signal }, (l) => io.err(`${l}\n`));
          print(s, () => `imported ${s.imported} items into keyspace ${s.keyspace} in ${s.seconds.toFixed(1)} s${s.resumedFrom ? `; ${s.resumedFrom} were done by an earlier run` : ''}; ${s.total} in the export`);
          return;
        }
        const s = await importFile(client(), file, { keyspace: o.keyspace, table: o.table, batch: o.batch, restart: o.restart === true, progress: o.progress && io.isTTY, model: o.model, signal: interrupt.signal }, (l) => io.err(`${l}\n`));
        print(s, () => `imported ${s.imported} records into ${o.keyspace}.${o.table} in ${s.seconds.toFixed(1)} s (${Math.round(s.imported / Math.max(s.seconds, 0.001))}/s)${s.resumedFrom ? `; ${s.resumedFrom} were done by an earlier run` : ''}; ${s.total} in the file`);
      } catch (e) {
        io.err(`import stopped: ${describe(e)}\n`);
        // Only where a re-run continues: after a bad record or a refused key it would stop at the same place.
        if (e instanceof ImportStopped && e.resumable) io.err(`progress is saved in ${e.stateFile}; run the same command again to resume.\n`);
        throw Object.assign(e as object, { reported: true });
      } finally {
        interrupt.dispose();
      }
    });

  ks(program.command('export'))
    .description('a keyspace, or one table, with its tables\' settings, rows, metadata records and files (the export format; `vss import` reads it back on any server), to stdout or --out')
    .option('-t, --table <name>', 'only this table')
    .option('-o, --out <file>', 'write to this file')
    .option('--rows', "only one table's rows as JSONL records (key, vector, text, metadata), as `vss import` reads into a table (-t, default vector)")
    .option('--no-vectors', 'with --rows: leave the vectors out')
    .action(async (o: { keyspace: string; table?: string; out?: string; rows?: boolean; vectors: boolean }) => {
      const c = client();
      async function* rows(): AsyncGenerator<string> {
        let cursor: string | null = null;
        do {
          const page: any = await c.post('/v1/vector/list', { keyspace: o.keyspace, table: o.table ?? 'vector', limit: 1000, include_vector: o.vectors, ...(cursor ? { cursor } : {}) });
          yield page.vectors.map((v: unknown) => `${JSON.stringify(v)}\n`).join('');
          cursor = page.cursor;
        } while (cursor);
      }
      async function* whole(): AsyncGenerator<Uint8Array> {
        const q = new URLSearchParams({ keyspace: o.keyspace, ...(o.table ? { table: o.table } : {}) });
        const res = await c.stream(`/v1/export?${q}`, { timeoutMs: 24 * 3600_000 });
        // The last line is {"type":"end",...}: without it the server stopped midway, and the file is not kept.
        let tail = '';
        for await (const chunk of Readable.fromWeb(res.body as any)) {
          tail = (tail + Buffer.from(chunk as Uint8Array).toString('latin1')).slice(-256);
          yield chunk as Uint8Array;
        }
        if (!/\{"type":"end"[^\n]*\}\n$/.test(tail)) throw new UnavailableError('the export stopped before its end: the server failed midway (see its log)');
      }
      const chunks = o.rows ? rows() : whole();
      if (o.out) await writeFileAtomically(o.out, chunks);
      else await pipeline(chunks, io.stdout, { end: false }); // stdout stays open for run() to finish
    });
}

/** keys (create, list, revoke). */
function addKeyCommands(program: Command, { client, print }: Commands): void {
  const keys = program.command('keys').description('API keys');
  keys
    .command('create')
    .description('make a key (its secret is shown once)')
    .option('--name <name>', 'a name to recognise it by', 'cli')
    .addOption(new Option('--permissions <p>', 'All, Write or Read').choices(['All', 'Write', 'Read']))
    .option('--resources <list>', 'comma-separated keyspace names, or *')
    .option('--user <id>', 'for another user (All keys only)')
    .action(async (o: { name: string; permissions?: string; resources?: string; user?: string }) => {
      const res = await client().post('/v1/keys/generate', {
        name: o.name,
        ...(o.permissions ? { permissions: o.permissions } : {}),
        ...(o.resources ? { resources: o.resources.split(',').map((s) => s.trim()) } : {}),
        ...(o.user ? { user_id: o.user } : {}),
      });
      print(res, () => `${res.key}\n(key ${res.key_id}, ${res.permissions} on ${res.resources.join(', ')}: store the secret now, it is not shown again)`);
    });
  keys
    .command('list', { isDefault: true })
    .description('your keys (no secrets)')
    .action(async () => {
      const res = await client().get('/v1/keys/retrieve');
      print(res, () => res.keys.map((k: any) => `${k.key_id}  ${k.permissions.padEnd(5)}  ${k.resources.join(',').padEnd(20)}  ${k.name}${k.revoked_at ? '  (revoked)' : ''}`).join('\n'));
    });
  keys
    .command('revoke <key_id>')
    .description('revoke a key')
    .action(async (id: string) => {
      const res = await client().post('/v1/keys/revoke', { key_id: id });
      print(res, () => `revoked ${res.key_id}`);
    });
}

/** embed. */
function addEmbedCommand(program: Command, { client, print }: Commands): void {
  program
    .command('embed <text>')
    .description("a text's embedding")
    .option('--model <name>', 'embedding model')
    .action(async (text: string, o: { model?: string }) => {
      const q = new URLSearchParams({ text, ...(o.model ? { model_name: o.model } : {}) });
      const res = await client().get(`/v1/generate/?${q}`);
      print(res, () => JSON.stringify(res.vector));
    });
}

export async function run(argv: string[], io: Io = { out: (s) => void process.stdout.write(s), err: (s) => void process.stderr.write(s), stdout: process.stdout, env: process.env, isTTY: process.stderr.isTTY === true }): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (!(e as { reported?: boolean }).reported) io.err(`error: ${describe(e)}\n`);
    return exitCodeOf(e);
  }
}
