/**
 * `vss snapshot create|list|download|delete` (the server's `/v1/snapshots`, an administrator key)
 * and `vss restore ARCHIVE --data-dir DIR`, which needs no server: it checks the whole archive
 * and only then makes the data directory (platform/snapshot-archive.ts).
 */
import { Readable } from 'node:stream';
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { extractArchive } from '../platform/snapshot-archive.ts';
import { LONG_TIMEOUT_MS, type Client } from './client.ts';
import type { Commands } from './main.ts';

const bytes = (n: number): string => (n < 2 ** 20 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 2 ** 20).toFixed(1)} MiB`);

/** A percentage bar on stderr while `work` runs, when the terminal shows one. */
async function withProgress<T>(show: boolean, label: string, work: (update: (fraction: number) => void) => Promise<T>): Promise<T> {
  const bar = show ? new cliProgress.SingleBar({ format: ` ${label} {bar} {percentage}%`, hideCursor: true, stream: process.stderr }, cliProgress.Presets.shades_classic) : null;
  bar?.start(100, 0);
  try {
    return await work((f) => bar?.update(Math.floor(f * 100)));
  } finally {
    bar?.stop();
  }
}

/** The server answers POST when the archive is complete; meanwhile its listing says how far it is. */
async function createWithProgress(client: Client, update: (fraction: number) => void): Promise<any> {
  let done = false;
  const poll = (async () => {
    while (!done) {
      await new Promise((r) => setTimeout(r, 500));
      const list = await client.get('/v1/snapshots').catch(() => null);
      if (!done && typeof list?.in_progress?.progress === 'number') update(list.in_progress.progress);
    }
  })();
  try {
    return await client.post('/v1/snapshots', undefined, { timeoutMs: LONG_TIMEOUT_MS });
  } finally {
    done = true;
    await poll;
  }
}

export function addSnapshotCommands(program: Command, { io, client, print, writeAtomically }: Commands): void {
  const snapshot = program.command('snapshot').description('snapshots of an embedded server (administrator key)');
  snapshot
    .command('create')
    .description('take a consistent snapshot now, while writes go on')
    .action(async () => {
      const res = await withProgress(io.isTTY, 'snapshot', (update) => createWithProgress(client(), update));
      print(res, () => `${res.name}  ${bytes(res.size)}  ${res.rows} rows  ${res.created_at}`);
    });
  snapshot
    .command('list', { isDefault: true })
    .description('the snapshots the server keeps')
    .action(async () => {
      const res = await client().get('/v1/snapshots');
      print(res, () =>
        [...res.snapshots.map((s: any) => `${s.name}  ${bytes(s.size).padStart(10)}  ${String(s.rows).padStart(9)} rows  ${s.created_at}`), ...(res.in_progress ? [`(${res.in_progress.name} being taken: ${Math.floor(res.in_progress.progress * 100)}%)`] : [])].join('\n') || '(no snapshots)',
      );
    });
  snapshot
    .command('download <name>')
    .description('download an archive')
    .requiredOption('-o, --out <file>', 'write it to this file')
    .action(async (name: string, o: { out: string }) => {
      const res = await client().stream(`/v1/snapshots/${encodeURIComponent(name)}`, { timeoutMs: 24 * 3600_000 });
      const size = Number(res.headers.get('content-length') ?? 0);
      await withProgress(io.isTTY && size > 0, 'download', async (update) => {
        let got = 0;
        async function* counted(): AsyncGenerator<Uint8Array> {
          for await (const chunk of Readable.fromWeb(res.body as any)) {
            got += (chunk as Uint8Array).length;
            update(got / size);
            yield chunk as Uint8Array;
          }
        }
        await writeAtomically(o.out, counted());
      });
      print({ name, file: o.out, size }, () => `${name} -> ${o.out} (${bytes(size)})`);
    });
  snapshot
    .command('delete <name>')
    .description('remove an archive from the server')
    .action(async (name: string) => {
      const res = await client().request('DELETE', `/v1/snapshots/${encodeURIComponent(name)}`);
      print(res, () => `deleted ${name}`);
    });

  program
    .command('restore <archive>')
    .description('make a new data directory from a snapshot archive (no server needed; start one on it afterwards)')
    .requiredOption('--data-dir <dir>', 'the data directory to create (must not exist)')
    .action(async (archive: string, o: { dataDir: string }) => {
      const m = await withProgress(io.isTTY, 'restore', (update) => extractArchive(archive, o.dataDir, update));
      print({ data_dir: o.dataDir, created_at: m.created_at, rows: m.rows.total, members: m.members.length }, () => `restored ${m.rows.total} rows (snapshot of ${m.created_at}) into ${o.dataDir}; indexes are rebuilt at its first start`);
    });
}
