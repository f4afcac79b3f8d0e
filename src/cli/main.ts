/**
 * The `vss` command line: a client of the HTTP API (plus `serve`, which starts the server).
 * Exit codes a script can act on: 0 done, 1 unexpected, 2 usage, 3 key refused (401/403),
 * 4 not found, 5 server unreachable or not ready, 6 request rejected (400/409/413/415/429).
 */
import { openAsBlob } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { ApiError, Client, ConnectionError } from './client.ts';
import { importFile, stateFileOf } from './import.ts';
import { RecordError } from './records.ts';
import { resolveSettings } from './settings.ts';

export const EXIT = { ok: 0, unexpected: 1, usage: 2, auth: 3, notFound: 4, unavailable: 5, rejected: 6 } as const;

function exitCodeOf(err: unknown): number {
  if (err instanceof ConnectionError) return EXIT.unavailable;
  if (err instanceof ApiError) {
    if (err.status === 401 || (err.status === 403 && err.code !== 'quota_exceeded')) return EXIT.auth;
    if (err.status === 404) return EXIT.notFound;
    if (err.status === 503) return EXIT.unavailable;
    if (err.status >= 400 && err.status < 500) return EXIT.rejected;
  }
  if (err instanceof RecordError) return EXIT.rejected;
  return EXIT.unexpected;
}

function describe(err: unknown): string {
  if (err instanceof ApiError) {
    const hint = err.status === 401 ? ' (set --key, VSS_API_KEY, or "key" in the config file)' : '';
    const fields = err.fieldErrors.map((f) => `\n  ${f.path}: ${f.message}`).join('');
    return `${err.detail} [HTTP ${err.status} ${err.code}]${hint}${fields}`;
  }
  return (err as Error)?.message ?? String(err);
}

const truncate = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function buildProgram(io: { out: (s: string) => void; err: (s: string) => void; env: NodeJS.ProcessEnv; isTTY: boolean }): Command {
  const program = new Command('vss')
    .description('vss: vector search and storage — a client of the HTTP API')
    .option('--url <url>', 'server URL (env VSS_URL; default http://127.0.0.1:8080)')
    .option('--key <key>', 'API key (env VSS_API_KEY)')
    .option('--config <file>', 'config file with {"url", "key"} (default ~/.config/vss/config.json)')
    .option('--json', 'print JSON instead of tables')
    .showHelpAfterError()
    .exitOverride();
  program.configureOutput({ writeOut: io.out, writeErr: io.err });

  const client = () => {
    const o = program.opts<{ url?: string; key?: string; config?: string }>();
    const s = resolveSettings(o, io.env);
    return new Client(s.url, s.key);
  };
  const json = () => program.opts<{ json?: boolean }>().json === true;
  const print = (value: unknown, human: () => string) => io.out(`${json() ? JSON.stringify(value, null, 2) : human()}\n`);
  const ks = (c: Command) => c.addOption(new Option('-k, --keyspace <name>', 'keyspace').default('default_keyspace'));
  const tb = (c: Command) => c.addOption(new Option('-t, --table <name>', 'table').default('vector'));

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
      const c = client();
      const res = await fetch(`${c.baseUrl.replace(/\/+$/, '')}/v1/healthcheck/`).catch((e: unknown) => {
        throw new ConnectionError(c.baseUrl, e);
      });
      const body = (await res.json()) as { status: string; checks: Record<string, string> };
      print(body, () => `${body.status}  (${Object.entries(body.checks).map(([k, v]) => `${k}: ${v}`).join(', ')})`);
      if (!res.ok) throw new ApiError(res.status, 'not_ready', `server is ${body.status}`);
    });

  const keyspaces = program.command('keyspaces').description('list or create keyspaces');
  keyspaces
    .command('list', { isDefault: true })
    .description('the keyspaces this key reaches, with their tables')
    .action(async () => {
      const res = await client().get('/v1/keyspaces/list');
      print(res, () =>
        res.keyspaces
          .map((k: any) => `${k.keyspace}\n${k.tables.map((t: any) => `  ${t.table.padEnd(24)} ${String(t.row_count).padStart(10)} rows  ${t.dimension}-d ${t.metric}`).join('\n')}`)
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
      print(k.tables, () => k.tables.map((t: any) => `${t.table.padEnd(24)} ${String(t.row_count).padStart(10)} rows  ${t.dimension}-d ${t.metric}`).join('\n') || '(no tables)');
    });

  tb(ks(program.command('search <text>')))
    .description('semantic search by text')
    .option('-n, --top <n>', 'matches to show', '5')
    .option('--filter <json>', 'metadata filter as JSON')
    .action(async (text: string, o: { keyspace: string; table: string; top: string; filter?: string }) => {
      const res = await client().post('/v1/search/', {
        query: text,
        keyspace: o.keyspace,
        table: o.table,
        final_top_k: Number(o.top),
        ...(o.filter ? { filter: JSON.parse(o.filter) } : {}),
      });
      print(res, () => {
        if (res.matches.length === 0) return '(no matches)';
        const width = Math.max(40, (process.stdout.columns || 100) - 40);
        return [`  #  score    key${' '.repeat(22)}text`]
          .concat(
            res.matches.map((m: any, i: number) => {
              const text = String(m.metadata?.text ?? JSON.stringify(m.metadata ?? {})).replace(/\s+/g, ' ');
              return `${String(i + 1).padStart(3)}  ${m.score.toFixed(4)}  ${truncate(m.key, 24).padEnd(24)}  ${truncate(text, width)}`;
            }),
          )
          .join('\n');
      });
    });

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
        const res = await c.request('POST', '/v1/embed/', undefined, { raw: form });
        results.push(res);
        if (!json()) io.out(`uploaded ${file}: ${res.file?.chunks ?? '?'} chunks\n`);
      }
      if (json()) io.out(`${JSON.stringify(results, null, 2)}\n`);
    });

  tb(ks(program.command('import <file>')))
    .description('bulk vectors or texts from .jsonl, .csv or .parquet; resumable')
    .option('--batch <n>', 'records per request', '500')
    .option('--model <name>', 'embedding model for records given as text')
    .option('--restart', 'ignore an earlier interrupted run and start from the first record')
    .option('--no-progress', 'no progress bar')
    .action(async (file: string, o: { keyspace: string; table: string; batch: string; restart?: boolean; progress: boolean; model?: string }) => {
      try {
        const s = await importFile(client(), file, { keyspace: o.keyspace, table: o.table, batch: Number(o.batch), restart: o.restart === true, progress: o.progress && io.isTTY, model: o.model }, (l) => io.err(`${l}\n`));
        print(s, () => `imported ${s.imported} records into ${o.keyspace}.${o.table} in ${s.seconds.toFixed(1)} s (${Math.round(s.imported / Math.max(s.seconds, 0.001))}/s)${s.resumedFrom ? `; ${s.resumedFrom} were done by an earlier run` : ''}; ${s.total} in the file`);
      } catch (e) {
        io.err(`import stopped: ${describe(e)}\nprogress is saved in ${stateFileOf(file)}; run the same command again to resume.\n`);
        throw Object.assign(e as object, { reported: true });
      }
    });

  tb(ks(program.command('export')))
    .description('a table as JSONL (to stdout, or --out)')
    .option('-o, --out <file>', 'write to this file')
    .option('--no-vectors', 'leave the vectors out')
    .action(async (o: { keyspace: string; table: string; out?: string; vectors: boolean }) => {
      const c = client();
      const lines: string[] = [];
      let cursor: string | null = null;
      do {
        const page: any = await c.post('/v1/vector/list', { keyspace: o.keyspace, table: o.table, limit: 1000, include_vector: o.vectors, ...(cursor ? { cursor } : {}) });
        for (const v of page.vectors) {
          const line = JSON.stringify(v);
          if (o.out) lines.push(line);
          else io.out(`${line}\n`);
        }
        cursor = page.cursor;
      } while (cursor);
      if (o.out) await writeFile(o.out, lines.length ? `${lines.join('\n')}\n` : '');
    });

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

  program
    .command('embed <text>')
    .description("a text's embedding")
    .option('--model <name>', 'embedding model')
    .action(async (text: string, o: { model?: string }) => {
      const q = new URLSearchParams({ text, ...(o.model ? { model_name: o.model } : {}) });
      const res = await client().get(`/v1/generate/?${q}`);
      print(res, () => JSON.stringify(res.vector));
    });

  return program;
}

export async function run(argv: string[], io = { out: (s: string) => void process.stdout.write(s), err: (s: string) => void process.stderr.write(s), env: process.env, isTTY: process.stderr.isTTY === true }): Promise<number> {
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
