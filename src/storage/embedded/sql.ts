/**
 * Small helpers shared by the embedded store's SQL modules: a statement cache, error mapping,
 * timestamps and the float32 BLOB encoding of vectors.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { Database } from './sqlite-driver.ts';
import { diskFull, isDiskFull, ServiceError } from '../../errors.ts';

export type Sqlite = BetterSqlite3.Database;
export type Statement = BetterSqlite3.Statement;

export class Db {
  readonly raw: Sqlite;
  readonly #cache = new Map<string, Statement>();

  constructor(raw: Sqlite) {
    this.raw = raw;
  }

  /** A prepared statement for fixed SQL text, prepared once. Do not pass SQL built from input. */
  stmt(sql: string): Statement {
    let s = this.#cache.get(sql);
    if (s === undefined) {
      s = this.raw.prepare(sql);
      this.#cache.set(sql, s);
    }
    return s;
  }

  /** Runs `fn` in one transaction (BEGIN IMMEDIATE, so a writer never upgrades mid-way). */
  tx<T>(fn: () => T): T {
    return this.raw.transaction(fn).immediate();
  }

  /**
   * As tx, but the commit is not synced to disk (WAL, synchronous NORMAL): for work a crash may
   * undo and that is done again after it (the expiry sweep). The next synced commit carries it.
   */
  txUnsynced<T>(fn: () => T): T {
    const was = this.raw.pragma('synchronous', { simple: true }) as number;
    this.raw.pragma('synchronous = NORMAL');
    try {
      return this.tx(fn);
    } finally {
      this.raw.pragma(`synchronous = ${Math.trunc(was)}`);
    }
  }
}

export const nowIso = (): string => new Date().toISOString();

/** True for a UNIQUE or PRIMARY KEY violation. */
export const isUniqueViolation = (e: unknown): boolean =>
  e instanceof Database.SqliteError && (e.code === 'SQLITE_CONSTRAINT_UNIQUE' || e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY');

/** File system errors that say the data directory cannot take writes now, not that the code is wrong. */
const UNAVAILABLE_FS_CODES = new Set(['EROFS', 'EACCES', 'EIO', 'EMFILE', 'ENFILE']);
/**
 * Driver and disk errors leave the backend as insufficient_storage (a full disk) or
 * storage_unavailable; ServiceErrors and bugs pass through.
 */
export function mapStorageError(e: unknown): unknown {
  if (isDiskFull(e)) return diskFull(e);
  if (e instanceof Database.SqliteError) return new ServiceError('storage_unavailable', `embedded storage failed: ${e.code}`, { cause: e });
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (typeof code === 'string' && UNAVAILABLE_FS_CODES.has(code)) return new ServiceError('storage_unavailable', `embedded storage failed: ${code}`, { cause: e });
  return e;
}

/** Float32 little-endian (the host order: openEmbeddedStorage refuses big-endian hosts). */
export const vectorToBlob = (v: Float32Array): Buffer => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

export function blobToVector(b: Buffer): Float32Array {
  const out = new Float32Array(b.byteLength >> 2);
  new Uint8Array(out.buffer).set(b.subarray(0, out.length * 4));
  return out;
}

/** A view when the BLOB is aligned (the common case), else a copy; for immediate use only. */
export const blobView = (b: Buffer): Float32Array =>
  b.byteOffset % 4 === 0 ? new Float32Array(b.buffer, b.byteOffset, b.byteLength >> 2) : blobToVector(b);
