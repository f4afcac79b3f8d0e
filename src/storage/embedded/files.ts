/**
 * Uploaded files of the embedded backend (the FileStore of storage/api.ts).
 *
 * A file's bytes live in `<dataDir>/files/<random id>`: a name the server chose, never one from
 * the client. Its `files` row, its chunk vectors `<name>#<i>` and its metadata record live in
 * SQLite and change together in one transaction (Vectors.replaceRows).
 *
 * A replacement: the new content is written to a temp file, fsynced and renamed into place (the
 * directory fsynced) BEFORE the transaction, so a committed row always names durable content;
 * then the transaction (old chunk rows out, new rows, metadata record and files row in); then the
 * matrix and index effects in the same synchronous turn; then the old content file is removed.
 * On failure the new content file is removed and nothing else has changed. A crash between the
 * steps leaves at most an unreferenced content file, which `sweep()` removes at the next open.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { diskFull, invalid, isDiskFull, ServiceError } from '../../errors.ts';
import type { FileRecord, MetadataRecord, VectorRow } from '../api.ts';
import type { Db } from './sql.ts';
import type { Vectors } from './vectors.ts';
import { writeFileDurably } from '../../platform/durable-file.ts';

interface FileRow {
  keyspace: string;
  table_name: string;
  name: string;
  size: number;
  sha256: string;
  type: string;
  chunks: number;
  stored_name: string;
  created_at: string;
}

const toRecord = (r: FileRow): FileRecord => ({
  keyspace: r.keyspace,
  table: r.table_name,
  name: r.name,
  size: r.size,
  sha256: r.sha256,
  type: r.type,
  chunks: r.chunks,
  createdAt: r.created_at,
});

/** The key of a file's chunk vector. */
export const chunkKey = (name: string, index: number): string => `${name}#${index}`;

const chunkKeys = (name: string, chunks: number): string[] => Array.from({ length: chunks }, (_, i) => chunkKey(name, i));

/** Stored content names: a UUID, plus `.tmp` while being written. */
const STORED_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(\.tmp)?$/;

const fsError = (what: string, e: unknown): ServiceError =>
  isDiskFull(e)
    ? diskFull(e)
    : new ServiceError('storage_unavailable', `embedded storage cannot ${what}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });

export class Files {
  readonly #db: Db;
  readonly #vectors: Vectors;
  readonly #dir: string;
  readonly #isOpen: () => boolean;
  /** While a snapshot copies stored contents, removals wait here (see hold()). */
  #holds = 0;
  #heldRemovals: string[] = [];

  constructor(db: Db, vectors: Vectors, dir: string, isOpen: () => boolean) {
    this.#db = db;
    this.#vectors = vectors;
    this.#dir = dir;
    this.#isOpen = isOpen;
  }

  /**
   * At open: makes the directory and removes content files no row names (left by a crash
   * mid-replacement); returns how many were removed.
   */
  sweep(): number {
    fs.mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
    const live = new Set(this.#db.stmt('SELECT stored_name FROM files').pluck().all() as string[]);
    let n = 0;
    for (const name of fs.readdirSync(this.#dir)) {
      if (live.has(name) || !STORED_NAME.test(name)) continue;
      fs.rmSync(path.join(this.#dir, name), { force: true });
      n++;
    }
    return n;
  }

  #row(keyspace: string, table: string, name: string): FileRow | undefined {
    return this.#db.stmt('SELECT * FROM files WHERE keyspace = ? AND table_name = ? AND name = ?').get(keyspace, table, name) as FileRow | undefined;
  }

  get(keyspace: string, table: string, name: string): FileRecord | null {
    const r = this.#row(keyspace, table, name);
    return r ? toRecord(r) : null;
  }

  list(keyspaces: string[]): FileRecord[] {
    if (keyspaces.length === 0) return [];
    const rows = this.#db
      .stmt('SELECT * FROM files WHERE keyspace IN (SELECT value FROM json_each(?)) ORDER BY keyspace, table_name, name')
      .all(JSON.stringify(keyspaces)) as FileRow[];
    return rows.map(toRecord);
  }

  async readContent(keyspace: string, table: string, name: string): Promise<Buffer | null> {
    // A replacement committed between reading the row and opening its content removes that
    // content: read the row again and retry.
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const r = this.#row(keyspace, table, name);
      if (!r) return null;
      try {
        return await fsp.readFile(path.join(this.#dir, r.stored_name));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError('read a stored file', e);
        lastError = e;
      }
    }
    throw fsError(`find the content of file ${name}`, lastError);
  }

  async replace(file: FileRecord, content: Buffer, rows: VectorRow[], record: MetadataRecord): Promise<void> {
    const problems: { path: string; message: string }[] = [];
    if (typeof file.name !== 'string' || file.name === '' || file.name.includes('/') || file.name.includes('\\')) {
      problems.push({ path: '/file/name', message: 'must be a non-empty base name' });
    }
    if (file.size !== content.length) problems.push({ path: '/file/size', message: `is ${file.size}, the content has ${content.length} bytes` });
    if (file.chunks !== rows.length) problems.push({ path: '/file/chunks', message: `is ${file.chunks}, ${rows.length} rows given` });
    rows.forEach((r, i) => {
      if (r.key !== chunkKey(file.name, i)) problems.push({ path: `/rows/${i}/key`, message: `must be ${chunkKey(file.name, i)}` });
    });
    if (record.keyspace !== file.keyspace || record.table !== file.table || record.source_file !== file.name) {
      problems.push({ path: '/record', message: "must describe the file (its keyspace, table and name as source_file)" });
    }
    if (problems.length > 0) throw invalid(problems);

    const stored = randomUUID();
    const target = path.join(this.#dir, stored);
    await this.#writeDurably(target, content);

    let previous: FileRow | undefined;
    try {
      if (!this.#isOpen()) throw new ServiceError('storage_unavailable', 'the embedded store is closed');
      const putFile = this.#db.stmt(
        `INSERT INTO files (keyspace, table_name, name, size, sha256, type, chunks, stored_name, created_at)
         VALUES (@keyspace, @table, @name, @size, @sha256, @type, @chunks, @stored, @created)
         ON CONFLICT (keyspace, table_name, name) DO UPDATE SET size = excluded.size, sha256 = excluded.sha256, type = excluded.type,
           chunks = excluded.chunks, stored_name = excluded.stored_name, created_at = excluded.created_at`,
      );
      const putRecord = this.#db.stmt(
        `INSERT INTO metadata_records (keyspace, table_name, source_file, raw_value, source_type, processing_details)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (keyspace, table_name, source_file) DO UPDATE SET
           raw_value = excluded.raw_value, source_type = excluded.source_type, processing_details = excluded.processing_details`,
      );
      this.#vectors.replaceRows(file.keyspace, file.table, rows, () => {
        // Read inside the transaction: a concurrent replacement of the same name committed
        // before this one is what gets replaced.
        previous = this.#row(file.keyspace, file.table, file.name);
        putFile.run({
          keyspace: file.keyspace,
          table: file.table,
          name: file.name,
          size: file.size,
          sha256: file.sha256,
          type: file.type,
          chunks: file.chunks,
          stored,
          created: file.createdAt,
        });
        putRecord.run(record.keyspace, record.table, record.source_file, record.raw_value, record.source_type, record.processing_details);
        return previous ? chunkKeys(previous.name, previous.chunks) : [];
      });
    } catch (e) {
      await fsp.rm(target, { force: true }).catch(() => undefined);
      throw e;
    }
    if (previous) await this.#removeContent(previous.stored_name);
  }

  /** Removes the file, its chunk vectors and its metadata record in one transaction. */
  async delete(keyspace: string, table: string, name: string): Promise<boolean> {
    if (!this.#isOpen()) throw new ServiceError('storage_unavailable', 'the embedded store is closed');
    if (!this.#row(keyspace, table, name)) return false;
    let previous: FileRow | undefined;
    this.#vectors.replaceRows(keyspace, table, [], () => {
      previous = this.#row(keyspace, table, name);
      if (!previous) return [];
      this.#db.stmt('DELETE FROM files WHERE keyspace = ? AND table_name = ? AND name = ?').run(keyspace, table, name);
      this.#db.stmt('DELETE FROM metadata_records WHERE keyspace = ? AND table_name = ? AND source_file = ?').run(keyspace, table, name);
      return chunkKeys(previous.name, previous.chunks);
    });
    if (!previous) return false;
    await this.#removeContent(previous.stored_name);
    return true;
  }

  /**
   * Keeps every stored content file in place until the returned release is called: a snapshot
   * copies the contents its database copy names, which a replacement committed meanwhile would
   * otherwise remove. Released removals then run.
   */
  hold(): () => Promise<void> {
    this.#holds++;
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      if (--this.#holds > 0) return;
      const names = this.#heldRemovals;
      this.#heldRemovals = [];
      for (const name of names) await this.#removeContent(name);
    };
  }

  /** After a commit: the content is no longer referenced; a failure here only leaves it for sweep(). */
  async #removeContent(stored: string): Promise<void> {
    if (this.#holds > 0) {
      this.#heldRemovals.push(stored);
      return;
    }
    await fsp.rm(path.join(this.#dir, stored), { force: true }).catch(() => undefined);
  }

  async #writeDurably(target: string, content: Buffer): Promise<void> {
    try {
      await writeFileDurably(target, content, { mode: 0o600 });
    } catch (e) {
      await fsp.rm(target, { force: true }).catch(() => undefined);
      throw fsError('store the file', e);
    }
  }
}
