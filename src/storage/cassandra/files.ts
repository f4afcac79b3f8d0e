/**
 * Uploaded files (the FileStore of storage/api.ts) in the system keyspace: a `files` row per
 * (keyspace, table, name) naming a `content_id`, the bytes in `file_content` as 256 KiB pieces
 * under that id, the chunk vectors `<name>#<i>` in the data table, and the metadata record.
 *
 * Cassandra has no multi-partition transaction. Instead the `files` row is the one switch point
 * of a file name, and every change to it is a lightweight transaction (LWT), so that two service
 * processes replacing or deleting one file take turns, as the embedded backend's transaction
 * makes them, and the last one leaves the file whole:
 *   - `op` names the operation that last took the file (a fresh id per take) and `op_until` is
 *     the end of its lease (null once it finished). An upload or delete takes the file by a
 *     compare-and-set on exactly the (op, op_until, content_id) it read (`IF NOT EXISTS` for a new
 *     name); while another operation's lease runs it waits, polling; a lease that ran out (its
 *     process died) is taken over. The holder renews its lease while it works.
 *   - `key_bound` bounds the chunk keys that may exist (`<name>#0` .. `<name>#<key_bound - 1>`):
 *     a taker raises it to cover its own chunks before writing any, so whoever comes next (a
 *     later upload deleting the surplus, a delete) reaches everything written, even by an upload
 *     that failed or died midway.
 * A replacement:
 *   1. validate everything (names, sizes, keys, record, the table, every vector): a bad request
 *      writes nothing and the old file stays whole;
 *   2. write the new content under a fresh content_id, which is also the op id;
 *   3. take the file (above); 4. upsert the new chunk rows, delete chunk keys from the new count
 *      up to key_bound, write the record;
 *   5. commit: `UPDATE ... SET content_id, size, ..., key_bound = chunks, op_until = null IF op =
 *      <mine>`; 6. delete the old content.
 * A delete takes the file the same way, deletes chunk keys below key_bound and the record, then
 * the row (`IF op = <mine>`), then the content: once the row is gone nothing of the file remains.
 * A file is visible (get, list, read) once its row names a content_id; a first upload's row has
 * none until it commits.
 * Known limits: during step 4 a search can see old and new chunks together; an upload that fails
 * in step 4 (an outage) leaves a mix until the name is uploaded again or deleted (both converge);
 * an operation whose process dies holds the name until its lease runs out (LEASE_MS); a crash
 * between 2 and 6 can leave unreferenced content pieces behind. Every file of a keyspace lives in
 * one partition, so LWTs on different files of one keyspace contend (Paxos is per partition).
 */
import cassandra from 'cassandra-driver';
import { invalid, ServiceError } from '../../errors.ts';
import type { FileRecord, MetadataRecord, VectorRow } from '../api.ts';
import { requireTable } from './catalog.ts';
import { type Ctx, sysTable } from './context.ts';
import { upsertMetadata } from './metadata-records.ts';
import { forEachLimit, type Row } from './session.ts';
import { deleteKeys, validateRows, writeRows } from './vectors.ts';

const PIECE = 256 * 1024;
const Uuid = cassandra.types.Uuid;

export const chunkKey = (name: string, index: number): string => `${name}#${index}`;
const chunkKeys = (name: string, from: number, to: number): string[] => Array.from({ length: Math.max(0, to - from) }, (_, i) => chunkKey(name, from + i));

const FILE_COLS = 'keyspace_name, table_name, name, size, sha256, type, chunks, content_id, created_at';

/** How long an upload or delete holds a file name without renewing; a holder renews every RENEW_MS. */
const LEASE_MS = 30_000;
const RENEW_MS = 5_000;
/** How long an upload or delete waits for another one of the same name before answering 503. */
const WAIT_MAX_MS = 120_000;

/** A bigint cell (the driver's Long) as a number. */
const num = (v: unknown): number => (typeof v === 'number' ? v : typeof (v as { toNumber?: () => number })?.toNumber === 'function' ? (v as { toNumber: () => number }).toNumber() : Number(v));

const toRecord = (r: Row): FileRecord => ({
  keyspace: r.keyspace_name as string,
  table: r.table_name as string,
  name: r.name as string,
  size: num(r.size),
  sha256: r.sha256 as string,
  type: r.type as string,
  chunks: r.chunks as number,
  createdAt: r.created_at as string,
});

async function fileRow(ctx: Ctx, keyspace: string, table: string, name: string): Promise<Row | null> {
  const rs = await ctx.session.execute('read', `SELECT ${FILE_COLS} FROM ${sysTable(ctx, 'files')} WHERE keyspace_name = ? AND table_name = ? AND name = ?`, [keyspace, table, name], {
    ctx: { action: 'reading a file' },
  });
  // A row without content_id is a first upload not yet committed: no file yet.
  return rs.rowLength > 0 && rs.first().content_id != null ? rs.first() : null;
}

export async function getFile(ctx: Ctx, keyspace: string, table: string, name: string): Promise<FileRecord | null> {
  const r = await fileRow(ctx, keyspace, table, name);
  return r ? toRecord(r) : null;
}

async function readContent(ctx: Ctx, contentId: unknown): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const page of ctx.session.pages(`SELECT seq, data FROM ${sysTable(ctx, 'file_content')} WHERE content_id = ?`, [contentId], {
    fetchSize: 16,
    ctx: { action: 'reading file content' },
  })) {
    for (const r of page) parts.push(r.data as Buffer);
  }
  return Buffer.concat(parts);
}

export async function readFileContent(ctx: Ctx, keyspace: string, table: string, name: string): Promise<Buffer | null> {
  // A replacement that lands between reading the row and its content deletes that content: retry.
  for (let attempt = 0; attempt < 3; attempt++) {
    const r = await fileRow(ctx, keyspace, table, name);
    if (!r) return null;
    const content = await readContent(ctx, r.content_id);
    if (content.length === num(r.size)) return content;
  }
  const r = await fileRow(ctx, keyspace, table, name);
  return r ? readContent(ctx, r.content_id) : null;
}

export async function listFiles(ctx: Ctx, keyspaces: string[]): Promise<FileRecord[]> {
  const out: FileRecord[] = [];
  for (const ks of [...new Set(keyspaces)].sort()) {
    for await (const page of ctx.session.pages(`SELECT ${FILE_COLS} FROM ${sysTable(ctx, 'files')} WHERE keyspace_name = ?`, [ks], { ctx: { action: 'listing files' } })) {
      for (const r of page) if (r.content_id != null) out.push(toRecord(r));
    }
  }
  return out;
}

async function writeContent(ctx: Ctx, contentId: InstanceType<typeof Uuid>, content: Buffer): Promise<void> {
  const pieces = Array.from({ length: Math.max(1, Math.ceil(content.length / PIECE)) }, (_, i) => i);
  const cql = `INSERT INTO ${sysTable(ctx, 'file_content')} (content_id, seq, data) VALUES (?, ?, ?)`;
  await forEachLimit(pieces, 4, (i) => ctx.session.write(cql, [contentId, i, content.subarray(i * PIECE, (i + 1) * PIECE)], { action: 'storing file content' }));
}

const deleteContent = (ctx: Ctx, contentId: unknown): Promise<void> =>
  ctx.session.write(`DELETE FROM ${sysTable(ctx, 'file_content')} WHERE content_id = ?`, [contentId], { action: 'deleting file content' });

export async function replaceFile(ctx: Ctx, file: FileRecord, content: Buffer, rows: VectorRow[], record: MetadataRecord): Promise<void> {
  const problems: { path: string; message: string }[] = [];
  if (typeof file?.name !== 'string' || file.name === '' || file.name.includes('/') || file.name.includes('\\')) {
    problems.push({ path: '/file/name', message: 'must be a non-empty base name' });
  }
  if (!Buffer.isBuffer(content)) problems.push({ path: '/content', message: 'must be a Buffer' });
  else if (file.size !== content.length) problems.push({ path: '/file/size', message: `is ${file.size}, the content has ${content.length} bytes` });
  if (file.chunks !== rows.length) problems.push({ path: '/file/chunks', message: `is ${file.chunks}, ${rows.length} rows given` });
  rows.forEach((r, i) => {
    if (r?.key !== chunkKey(file.name, i)) problems.push({ path: `/rows/${i}/key`, message: `must be ${chunkKey(file.name, i)}` });
  });
  if (record?.keyspace !== file.keyspace || record?.table !== file.table || record?.source_file !== file.name) {
    problems.push({ path: '/record', message: 'must describe the file (its keyspace, table and name as source_file)' });
  }
  if (problems.length > 0) throw invalid(problems);
  const t = await requireTable(ctx, file.keyspace, file.table);
  const valid = validateRows(t, rows, '/rows');

  const contentId = Uuid.random();
  try {
    await writeContent(ctx, contentId, content);
  } catch (err) {
    await deleteContent(ctx, contentId).catch(() => undefined);
    throw err;
  }
  let held: Held;
  try {
    held = (await take(ctx, file.keyspace, file.table, file.name, contentId, rows.length, true))!;
  } catch (err) {
    await deleteContent(ctx, contentId).catch(() => undefined);
    throw err;
  }
  try {
    await writeRows(ctx, t, valid);
    held.check();
    await deleteKeys(ctx, t, chunkKeys(file.name, rows.length, held.bound));
    await upsertMetadata(ctx, [record]);
    held.check();
  } catch (err) {
    // The old file row stays; key_bound still covers what was written, for the next upload or delete.
    await held.release();
    await deleteContent(ctx, contentId).catch(() => undefined);
    throw err;
  }
  // Commit. A timeout leaves the outcome unknown: then the content stays (the row may name it)
  // and the lease runs out; whoever takes the name next deletes the content if it was not committed.
  await held.stopRenewing();
  const rs = await ctx.session.execute(
    'lwt',
    `UPDATE ${sysTable(ctx, 'files')} SET size = ?, sha256 = ?, type = ?, chunks = ?, content_id = ?, created_at = ?, key_bound = ?, op_until = null
     WHERE keyspace_name = ? AND table_name = ? AND name = ? IF op = ?`,
    [file.size, file.sha256, file.type, file.chunks, contentId, file.createdAt, rows.length, file.keyspace, file.table, file.name, contentId],
    { ctx: { action: 'storing a file' } },
  );
  if (!rs.wasApplied()) {
    await deleteContent(ctx, contentId).catch(() => undefined);
    throw lostLease(file.name);
  }
  const old = held.previous?.content_id;
  if (old != null) await deleteContent(ctx, old).catch(() => undefined);
}

/**
 * Takes the file (as an upload does), deletes its chunk keys below key_bound and its record, then
 * its row (`IF op = <mine>`) and content. False when no file of that name was committed.
 */
export async function deleteFile(ctx: Ctx, keyspace: string, table: string, name: string): Promise<boolean> {
  const op = Uuid.random();
  const held = await take(ctx, keyspace, table, name, op, 0, false);
  if (!held) return false;
  const errCtx = { action: 'deleting a file' };
  try {
    const t = await requireTable(ctx, keyspace, table).catch(() => null);
    if (t) await deleteKeys(ctx, t, chunkKeys(name, 0, held.bound));
    await ctx.session.write(`DELETE FROM ${sysTable(ctx, 'metadata_records')} WHERE keyspace_name = ? AND table_name = ? AND source_file = ?`, [keyspace, table, name], errCtx);
    held.check();
  } catch (err) {
    await held.release();
    throw err;
  }
  await held.stopRenewing();
  const rs = await ctx.session.execute('lwt', `DELETE FROM ${sysTable(ctx, 'files')} WHERE keyspace_name = ? AND table_name = ? AND name = ? IF op = ?`, [keyspace, table, name, op], {
    ctx: errCtx,
  });
  if (!rs.wasApplied()) throw lostLease(name);
  const content = held.previous?.content_id;
  if (content != null) await deleteContent(ctx, content).catch(() => undefined);
  return content != null;
}

const lostLease = (name: string): ServiceError =>
  new ServiceError('storage_unavailable', `The change to file "${name}" took longer than its lease and another request took the file over; try again.`);

/** A file name taken by one upload or delete: the row as it was when taken, the key bound, the lease. */
interface Held {
  /** The row when taken (null: it did not exist). */
  readonly previous: Row | null;
  /** Chunk keys `<name>#0` .. `<name>#<bound - 1>` may exist. */
  readonly bound: number;
  /** Throws if another operation took the file over (this one's lease ran out). */
  check(): void;
  /** Stops renewing the lease (before the committing LWT). */
  stopRenewing(): Promise<void>;
  /** On failure: stops renewing and lets the name go at once (best effort: else the lease runs out). */
  release(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Takes a file name for operation `op` (see the header): a compare-and-set on the row as read,
 * or `IF NOT EXISTS` when there is none and `create` is set (without `create`, no row: null).
 * Waits while another operation's lease runs. Raises key_bound to cover `chunks` keys.
 */
async function take(ctx: Ctx, keyspace: string, table: string, name: string, op: InstanceType<typeof Uuid>, chunks: number, create: boolean): Promise<Held | null> {
  const files = sysTable(ctx, 'files');
  const errCtx = { action: create ? 'storing a file' : 'deleting a file' };
  const where = 'keyspace_name = ? AND table_name = ? AND name = ?';
  const deadline = Date.now() + WAIT_MAX_MS;
  const key = [keyspace, table, name] as const;
  for (let attempt = 0; ; attempt++) {
    const rs = await ctx.session.execute('read', `SELECT content_id, chunks, op, op_until, key_bound FROM ${files} WHERE ${where}`, [...key], { ctx: errCtx });
    const r = rs.rowLength > 0 ? rs.first() : null;
    const until = new Date(Date.now() + LEASE_MS);
    let bound = chunks;
    let taken: cassandra.types.ResultSet;
    if (r === null) {
      if (!create) return null;
      const cql = `INSERT INTO ${files} (keyspace_name, table_name, name, op, op_until, key_bound) VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS`;
      taken = await takeLwt(ctx, cql, [...key, op, until, bound], key, op, errCtx);
    } else {
      const heldUntil = r.op_until as Date | null;
      if (heldUntil !== null && heldUntil.getTime() > Date.now()) {
        if (Date.now() > deadline) throw new ServiceError('storage_unavailable', `File "${name}" is being changed by another request; try again.`);
        await sleep(Math.min(200, 5 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random()));
        continue;
      }
      bound = Math.max(chunks, (r.key_bound as number | null) ?? (r.chunks as number | null) ?? 0);
      // All three as read: op changes at every take, so nothing was taken (or committed) since;
      // op_until, so that a lease renewed since is not taken over; content_id, because CQL's
      // `IF x = null` holds on a missing row: every row has op or content_id set (rows from
      // before these columns have no op), so the condition fails on a row deleted since.
      const cql = `UPDATE ${files} SET op = ?, op_until = ?, key_bound = ? WHERE ${where} IF op = ? AND op_until = ? AND content_id = ?`;
      taken = await takeLwt(ctx, cql, [op, until, bound, ...key, r.op ?? null, heldUntil, r.content_id ?? null], key, op, errCtx);
    }
    if (!taken.wasApplied()) continue; // another operation took it first: look again
    if (r !== null && r.op != null && (r.content_id == null || !(r.op as InstanceType<typeof Uuid>).equals(r.content_id as InstanceType<typeof Uuid>))) {
      // The operation before did not commit (it failed, or died and its lease ran out): its content, if any, is nobody's.
      await deleteContent(ctx, r.op).catch(() => undefined);
    }
    return lease(ctx, key, op, r, bound);
  }
}

type FileKey = readonly [keyspace: string, table: string, name: string];

/** Lets the name go at once if `op` still holds it (best effort: else its lease runs out). */
const letGo = (ctx: Ctx, key: FileKey, op: InstanceType<typeof Uuid>): Promise<unknown> =>
  ctx.session
    .execute('lwt', `UPDATE ${sysTable(ctx, 'files')} SET op_until = null WHERE keyspace_name = ? AND table_name = ? AND name = ? IF op = ?`, [...key, op])
    .catch(() => undefined);

/** The taking LWT; if it fails (a timeout leaves its outcome unknown), lets the name go again. */
async function takeLwt(ctx: Ctx, cql: string, params: unknown[], key: FileKey, op: InstanceType<typeof Uuid>, errCtx: { action: string }): Promise<cassandra.types.ResultSet> {
  try {
    return await ctx.session.execute('lwt', cql, params, { ctx: errCtx });
  } catch (err) {
    await letGo(ctx, key, op);
    throw err;
  }
}

/** The lease of a taken name, renewed every RENEW_MS until stopped. */
function lease(ctx: Ctx, key: FileKey, op: InstanceType<typeof Uuid>, previous: Row | null, bound: number): Held {
  const files = sysTable(ctx, 'files');
  const where = 'keyspace_name = ? AND table_name = ? AND name = ?';
  let lost = false;
  let renewing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    renewing = renewing.then(async () => {
      try {
        const rs = await ctx.session.execute('lwt', `UPDATE ${files} SET op_until = ? WHERE ${where} IF op = ?`, [new Date(Date.now() + LEASE_MS), ...key, op]);
        if (!rs.wasApplied()) lost = true;
      } catch {
        // a renewal that fails: the next one may succeed, and the commit checks op anyway
      }
    });
  }, RENEW_MS);
  timer.unref();
  const stopRenewing = async (): Promise<void> => {
    clearInterval(timer);
    await renewing;
  };
  return {
    previous,
    bound,
    check: () => {
      if (lost) throw lostLease(key[2]);
    },
    stopRenewing,
    release: async () => {
      await stopRenewing();
      await letGo(ctx, key, op);
    },
  };
}

/** Bytes of the files stored in the given keyspaces. */
export async function fileBytes(ctx: Ctx, keyspaces: string[]): Promise<number> {
  let n = 0;
  for (const ks of new Set(keyspaces)) {
    for await (const page of ctx.session.pages(`SELECT size FROM ${sysTable(ctx, 'files')} WHERE keyspace_name = ?`, [ks])) for (const r of page) n += num(r.size);
  }
  return n;
}
