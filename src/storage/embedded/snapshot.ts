/**
 * The embedded backend's snapshot (Storage.snapshot): SQLite's online backup of `vss.db` and a
 * copy of every stored file the copied database names. Vector files and ANN indexes are derived
 * and left out: a data directory without them rebuilds them from the database at its first start.
 *
 * The backup runs on the service's own connection a few pages per turn of the event loop, so
 * writes go on meanwhile; SQLite carries a write made on that connection during the backup into
 * the copy, so the copy is the database as it stood when the backup finished. Stored contents
 * are never rewritten (each has its own random name), and removals of replaced ones are held
 * until the copy is done (Files.hold), so every content the copy names is still there to copy.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { Database } from './sqlite-driver.ts';
import { DIR_MODE, FILE_MODE } from '../../platform/private-dir.ts';
import type { SnapshotImage } from '../api.ts';
import type { Files } from './files.ts';

/** Pages copied per step: small enough that a step does not hold a write back for long. */
const PAGES_PER_STEP = 256;

export async function snapshotInto(raw: BetterSqlite3.Database, files: Files, dataDir: string, dir: string, onProgress?: (fraction: number) => void): Promise<SnapshotImage> {
  const release = files.hold();
  try {
    const dbCopy = path.join(dir, 'vss.db');
    await raw.backup(dbCopy, {
      progress: ({ totalPages, remainingPages }) => {
        onProgress?.(totalPages === 0 ? 0.5 : (0.5 * (totalPages - remainingPages)) / totalPages);
        return PAGES_PER_STEP;
      },
    });
    // The copy closed in the step that just resolved; only callbacks already queued in that turn run before this line.
    const takenAt = new Date().toISOString();
    await fs.chmod(dbCopy, FILE_MODE);
    const copy = new Database(dbCopy);
    let stored: string[];
    let tables: SnapshotImage['tables'];
    try {
      // One file, no -wal beside it: what a restore unpacks is the whole database.
      copy.pragma('journal_mode = DELETE');
      stored = copy.prepare('SELECT stored_name FROM files ORDER BY stored_name').pluck().all() as string[];
      tables = copy
        .prepare('SELECT t.keyspace AS keyspace, t.name AS "table", (SELECT count(*) FROM vectors v WHERE v.table_id = t.id) AS rows FROM tables t ORDER BY t.keyspace, t.name')
        .all() as SnapshotImage['tables'];
    } finally {
      copy.close();
    }
    const members = ['vss.db'];
    if (stored.length > 0) await fs.mkdir(path.join(dir, 'files'), { mode: DIR_MODE });
    for (const [i, name] of stored.entries()) {
      await fs.copyFile(path.join(dataDir, 'files', name), path.join(dir, 'files', name));
      members.push(`files/${name}`);
      onProgress?.(0.5 + (0.5 * (i + 1)) / stored.length);
    }
    return { takenAt, members, tables };
  } finally {
    await release();
  }
}
