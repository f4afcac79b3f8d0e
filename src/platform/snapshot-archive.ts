/**
 * The snapshot archive: one file holding a data directory's members, with a manifest and
 * checksums, read back all or nothing. Layout (docs/API.md, "Snapshots"):
 *
 *   8 bytes   magic `VSSSNAP\n`
 *   4 bytes   manifest length M, unsigned big-endian
 *   M bytes   manifest, UTF-8 JSON: {format: "vss-snapshot", version: 1, created_at, storage,
 *             rows: {total, tables: [{keyspace, table, rows}]}, members: [{name, size, sha256}]}
 *   …         each member's bytes, in the manifest's order, nothing between them
 *   32 bytes  SHA-256 of every byte before it
 *
 * Our own container rather than a tar: the trailing digest covers every byte (a tar's padding
 * and headers would need their own checks), and the manifest comes first so a listing reads only it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fsyncDir } from './durable-file.ts';
import { DIR_MODE, FILE_MODE } from './private-dir.ts';

export const ARCHIVE_FORMAT = 'vss-snapshot';
export const ARCHIVE_VERSION = 1;
const MAGIC = Buffer.from('VSSSNAP\n', 'latin1');
const HEAD = MAGIC.length + 4;
const DIGEST = 32;
/** A manifest past this is not one of ours (a million members would still fit). */
const MAX_MANIFEST = 64 * 2 ** 20;
/** Member names: relative paths of plain segments, never `..`, absolute or odd characters. */
const MEMBER_NAME = /^(?!.*(^|\/)\.\.?(\/|$))[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

export interface TableRows {
  keyspace: string;
  table: string;
  rows: number;
}

export interface ArchiveMember {
  name: string;
  size: number;
  sha256: string;
}

export interface Manifest {
  format: typeof ARCHIVE_FORMAT;
  version: number;
  created_at: string;
  storage: string;
  rows: { total: number; tables: TableRows[] };
  members: ArchiveMember[];
}

/** An archive that is damaged, truncated, or not a snapshot: refused whole. */
export class ArchiveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveError';
  }
}

async function sha256Of(file: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest('hex') };
}

/**
 * Writes the archive of the files under `dir` (member names relative to it) to `target`, mode
 * 0600: through a temp file, fsynced and renamed, so `target` is whole or absent. The files must
 * not change meanwhile (they are a staging copy). `onProgress` gets the fraction written.
 */
export async function writeArchive(target: string, dir: string, names: string[], info: Pick<Manifest, 'created_at' | 'storage' | 'rows'>, onProgress?: (done: number) => void): Promise<Manifest> {
  const members: ArchiveMember[] = [];
  for (const name of names) {
    if (!MEMBER_NAME.test(name)) throw new ArchiveError(`member name ${JSON.stringify(name)} is not a plain relative path`);
    members.push({ name, ...(await sha256Of(path.join(dir, name))) });
  }
  const manifest: Manifest = { format: ARCHIVE_FORMAT, version: ARCHIVE_VERSION, ...info, members };
  const json = Buffer.from(JSON.stringify(manifest), 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  const total = members.reduce((n, m) => n + m.size, 0);
  const tmp = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fh = await fs.open(tmp, 'wx', FILE_MODE);
  try {
    const hash = createHash('sha256');
    const put = async (b: Buffer): Promise<void> => {
      hash.update(b);
      await fh.write(b);
    };
    await put(MAGIC);
    await put(length);
    await put(json);
    let written = 0;
    for (const m of members) {
      for await (const chunk of createReadStream(path.join(dir, m.name), { highWaterMark: 1 << 20 })) {
        await put(chunk as Buffer);
        written += (chunk as Buffer).length;
        onProgress?.(total === 0 ? 1 : written / total);
      }
    }
    await fh.write(hash.digest());
    await fh.sync();
    await fh.close();
    await fs.rename(tmp, target);
    await fsyncDir(path.dirname(target));
  } catch (e) {
    await fh.close().catch(() => undefined);
    await fs.rm(tmp, { force: true });
    throw e;
  }
  return manifest;
}

function parseManifest(json: Buffer): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(json.toString('utf8')) as Manifest;
  } catch {
    throw new ArchiveError('the manifest is not JSON: not a snapshot, or damaged');
  }
  if (m?.format !== ARCHIVE_FORMAT) throw new ArchiveError('not a vss snapshot (no vss-snapshot manifest)');
  if (m.version !== ARCHIVE_VERSION) throw new ArchiveError(`snapshot format version ${JSON.stringify(m.version)}; this vss reads version ${ARCHIVE_VERSION}`);
  if (!Array.isArray(m.members)) throw new ArchiveError('the manifest lists no members');
  const seen = new Set<string>();
  for (const x of m.members) {
    if (typeof x?.name !== 'string' || !MEMBER_NAME.test(x.name) || seen.has(x.name)) throw new ArchiveError(`bad member name in the manifest: ${JSON.stringify(x?.name)}`);
    if (!Number.isSafeInteger(x.size) || x.size < 0 || typeof x.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(x.sha256)) throw new ArchiveError(`bad size or sha256 for member ${x.name}`);
    seen.add(x.name);
  }
  return m;
}

/** The manifest at the head of an archive (a listing: not a check of the members). */
export const readManifest = async (file: string): Promise<Manifest> => (await readHead(file)).manifest;

async function readHead(file: string): Promise<{ manifest: Manifest; manifestLength: number }> {
  const fh = await fs.open(file, 'r');
  try {
    const head = Buffer.alloc(HEAD);
    if ((await fh.read(head, 0, HEAD, 0)).bytesRead !== HEAD || !head.subarray(0, MAGIC.length).equals(MAGIC)) throw new ArchiveError('not a vss snapshot (wrong magic bytes)');
    const len = head.readUInt32BE(MAGIC.length);
    if (len > MAX_MANIFEST) throw new ArchiveError('the manifest length is out of range');
    const json = Buffer.alloc(len);
    if ((await fh.read(json, 0, len, HEAD)).bytesRead !== len) throw new ArchiveError('the archive ends inside its manifest: truncated');
    return { manifest: parseManifest(json), manifestLength: len };
  } finally {
    await fh.close();
  }
}

/**
 * Checks the whole archive and writes its members into `target`, which must not exist: first
 * into a temp directory beside it, renamed to `target` only once every member's size and SHA-256
 * and the archive's own digest matched. Any mismatch leaves nothing behind.
 */
export async function extractArchive(file: string, target: string, onProgress?: (done: number) => void): Promise<Manifest> {
  const { manifest, manifestLength } = await readHead(file);
  const st = await fs.stat(file);
  const body = manifest.members.reduce((n, m) => n + m.size, 0);
  const expected = HEAD + manifestLength + body + DIGEST;
  if (st.size < expected) throw new ArchiveError(`the archive has ${st.size} bytes, its manifest needs ${expected}: truncated`);
  if (st.size > expected) throw new ArchiveError(`the archive has ${st.size} bytes, its manifest describes ${expected}: extra bytes, damaged`);
  try {
    await fs.access(target);
    throw new ArchiveError(`${target} already exists: restore makes a new data directory`);
  } catch (e) {
    if (e instanceof ArchiveError) throw e;
  }
  const parent = path.dirname(path.resolve(target));
  await fs.mkdir(parent, { recursive: true });
  const tmp = await fs.mkdtemp(path.join(parent, `.${path.basename(target)}.restore-`));
  await fs.chmod(tmp, DIR_MODE);
  try {
    const whole = createHash('sha256');
    const stream = createReadStream(file, { end: expected - DIGEST - 1, highWaterMark: 1 << 20 });
    let offset = 0;
    let index = -1;
    let member: { fh: fs.FileHandle; hash: ReturnType<typeof createHash>; left: number } | null = null;
    const start = HEAD + manifestLength;
    const open = async (): Promise<void> => {
      // Members of size 0 open and close at once.
      while (member === null || member.left === 0) {
        if (member) await close();
        index++;
        if (index >= manifest.members.length) return;
        const m = manifest.members[index];
        const p = path.join(tmp, m.name);
        await fs.mkdir(path.dirname(p), { recursive: true, mode: DIR_MODE });
        member = { fh: await fs.open(p, 'wx', FILE_MODE), hash: createHash('sha256'), left: m.size };
      }
    };
    const close = async (): Promise<void> => {
      const m = manifest.members[index];
      const cur = member!;
      member = null;
      await cur.fh.sync();
      await cur.fh.close();
      if (cur.hash.digest('hex') !== m.sha256) throw new ArchiveError(`member ${m.name} does not match its SHA-256: damaged`);
    };
    for await (const chunk of stream) {
      let buf = chunk as Buffer;
      whole.update(buf);
      if (offset + buf.length <= start) {
        offset += buf.length;
        continue;
      }
      if (offset < start) {
        buf = buf.subarray(start - offset);
        offset = start;
      }
      while (buf.length > 0) {
        await open();
        if (member === null) throw new ArchiveError('bytes past the last member: damaged');
        const cur: { fh: fs.FileHandle; hash: ReturnType<typeof createHash>; left: number } = member;
        const part = buf.subarray(0, Math.min(buf.length, cur.left));
        cur.hash.update(part);
        await cur.fh.write(part);
        cur.left -= part.length;
        offset += part.length;
        buf = buf.subarray(part.length);
        onProgress?.(body === 0 ? 1 : (offset - start) / body);
      }
    }
    await open(); // the trailing empty members, and closes the last one
    if (member !== null) throw new ArchiveError('the archive ended inside a member: truncated');
    const trailer = Buffer.alloc(DIGEST);
    const fh = await fs.open(file, 'r');
    await fh.read(trailer, 0, DIGEST, expected - DIGEST).finally(() => fh.close());
    if (!whole.digest().equals(trailer)) throw new ArchiveError("the archive's SHA-256 does not match its trailer: damaged");
    await fs.rename(tmp, target);
    await fsyncDir(parent);
    return manifest;
  } catch (e) {
    await fs.rm(tmp, { recursive: true, force: true });
    throw e;
  }
}
