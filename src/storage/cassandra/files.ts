/**
 * Uploaded files (the FileStore of storage/api.ts) in the system keyspace: a `files` row per
 * (keyspace, table, name) naming a `content_id`, the bytes in `file_content` as 256 KiB pieces
 * under that id, the chunk vectors `<name>#<i>` in the data table, and the metadata record.
 *
 * Cassandra has no multi-partition transaction, so a replacement is ordered to be safe to repeat:
 *   1. validate everything (names, sizes, keys, record, the table, every vector): a bad request
 *      writes nothing and the old file stays whole;
 *   2. write the new content under a fresh content_id (invisible until step 5);
 *   3. upsert the new chunk rows; 4. delete old chunks beyond the new count; write the record;
 *   5. point the files row at the new content; 6. delete the old content.
 * Known limits: during steps 3-4 a search can see old and new chunks together, and an outage
 * in steps 3-5 leaves a mix until the upload is repeated (which converges); a crash between 2
 * and 6 can leave unreferenced content pieces behind.
 */
import { randomUUID } from 'node:crypto';
import cassandra from 'cassandra-driver';
import { invalid } from '../../errors.ts';
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
  return rs.rowLength > 0 ? rs.first() : null;
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
      for (const r of page) out.push(toRecord(r));
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

  const previous = await fileRow(ctx, file.keyspace, file.table, file.name);
  const contentId = Uuid.random();
  try {
    await writeContent(ctx, contentId, content);
  } catch (err) {
    await deleteContent(ctx, contentId).catch(() => undefined);
    throw err;
  }
  await writeRows(ctx, t, valid);
  if (previous) await deleteKeys(ctx, file.keyspace, file.table, chunkKeys(file.name, rows.length, previous.chunks as number));
  await upsertMetadata(ctx, [record]);
  await ctx.session.write(
    `INSERT INTO ${sysTable(ctx, 'files')} (${FILE_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [file.keyspace, file.table, file.name, file.size, file.sha256, file.type, file.chunks, contentId, file.createdAt],
    { action: 'storing a file' },
  );
  if (previous) await deleteContent(ctx, previous.content_id).catch(() => undefined);
}

/** Removes the files row first (the file is gone for readers), then its chunks, record and content. */
export async function deleteFile(ctx: Ctx, keyspace: string, table: string, name: string): Promise<boolean> {
  const r = await fileRow(ctx, keyspace, table, name);
  if (!r) return false;
  await ctx.session.write(`DELETE FROM ${sysTable(ctx, 'files')} WHERE keyspace_name = ? AND table_name = ? AND name = ?`, [keyspace, table, name], {
    action: 'deleting a file',
  });
  const t = await requireTable(ctx, keyspace, table).catch(() => null);
  if (t) await deleteKeys(ctx, keyspace, table, chunkKeys(name, 0, r.chunks as number));
  await ctx.session.write(`DELETE FROM ${sysTable(ctx, 'metadata_records')} WHERE keyspace_name = ? AND table_name = ? AND source_file = ?`, [keyspace, table, name], {
    action: 'deleting a file',
  });
  await deleteContent(ctx, r.content_id);
  return true;
}

/** Bytes of the files stored in the given keyspaces. */
export async function fileBytes(ctx: Ctx, keyspaces: string[]): Promise<number> {
  let n = 0;
  for (const ks of new Set(keyspaces)) {
    for await (const page of ctx.session.pages(`SELECT size FROM ${sysTable(ctx, 'files')} WHERE keyspace_name = ?`, [ks])) for (const r of page) n += num(r.size);
  }
  return n;
}
