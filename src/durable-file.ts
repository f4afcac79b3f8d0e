/**
 * Writing a file so that it is either wholly there or not at all after a crash: a unique temp
 * file beside it, fsync, rename over the target, fsync of the directory (so the rename itself
 * survives). Used by every derived or stored file the service writes outside SQLite.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

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

export async function writeFileDurably(file: string, data: string | Buffer, opts: { mode?: number } = {}): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const fh = await fs.open(tmp, 'wx', opts.mode ?? 0o644);
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
