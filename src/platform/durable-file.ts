/**
 * Writing a file so that it is either wholly there or not at all after a crash: a unique temp
 * file beside it, fsync, rename over the target, fsync of the directory (so the rename itself
 * survives). Used by every derived or stored file the service writes outside SQLite.
 */
import { randomBytes } from 'node:crypto';
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { FILE_MODE } from './private-dir.ts';

/** writeFileDurably's temp files: `<target>.<pid>.<8 hex>.tmp`. */
const TEMP = /\.(\d+)\.[0-9a-f]{8}\.tmp$/;

/**
 * Removes the temp files of writeFileDurably that a process killed mid-write left in `dir`
 * (never this process's own); returns how many. For start-up, before anything writes there.
 */
export function removeDeadTemps(dir: string): number {
  let names: string[];
  try {
    names = fsSync.readdirSync(dir);
  } catch {
    return 0; // no such directory yet
  }
  let n = 0;
  for (const name of names) {
    const m = TEMP.exec(name);
    if (m === null || Number(m[1]) === process.pid) continue;
    fsSync.rmSync(path.join(dir, name), { force: true });
    n++;
  }
  return n;
}

/** Flushes a file's (or directory's) contents to the disk. */
export async function fsyncPath(p: string): Promise<void> {
  const fh = await fs.open(p, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export async function fsyncDir(dir: string): Promise<void> {
  try {
    await fsyncPath(dir);
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic.
  }
}

/** `mode` of a new file: owner-only by default, as everything in the data directory (private-dir.ts). */
export async function writeFileDurably(file: string, data: string | Buffer, opts: { mode?: number } = {}): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const fh = await fs.open(tmp, 'wx', opts.mode ?? FILE_MODE);
    try {
      await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
    await fsyncDir(path.dirname(file));
  } finally {
    await fs.rm(tmp, { force: true });
  }
}
