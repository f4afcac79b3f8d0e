/**
 * Online snapshots of the embedded data directory (`/v1/snapshots`): the storage copies a
 * point-in-time image into a staging directory (Storage.snapshot), which is packed into one
 * archive (platform/snapshot-archive.ts) in `<dataDir>/snapshots/`, mode 0600. One snapshot at a
 * time per process: a second request while one runs is a 409 with its progress.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, type ReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { ServiceError } from '../errors.ts';
import { removeDeadTemps } from '../platform/durable-file.ts';
import { DIR_MODE } from '../platform/private-dir.ts';
import { readManifest, writeArchive, type Manifest } from '../platform/snapshot-archive.ts';
import type { Storage } from '../storage/api.ts';
import type { Deps } from './deps.ts';

/** Names the service gives archives: the time and 6 random hex digits. */
export const SNAPSHOT_NAME = /^snapshot-\d{8}T\d{6}Z-[0-9a-f]{6}\.vss$/;
const STAGING_PREFIX = '.staging-';

export interface SnapshotView {
  name: string;
  size: number;
  created_at: string;
  rows: number;
  tables: Manifest['rows']['tables'];
  format_version: number;
}

interface Running {
  name: string;
  started_at: string;
  progress: number;
}

/** The snapshot each storage is taking (one at a time). */
const running = new WeakMap<Storage, Running>();

const dirOf = (deps: Deps): string => path.join(deps.config.dataDir, 'snapshots');

const viewOf = (name: string, size: number, m: Manifest): SnapshotView => ({ name, size, created_at: m.created_at, rows: m.rows.total, tables: m.rows.tables, format_version: m.version });

function newName(now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `snapshot-${stamp}-${randomBytes(3).toString('hex')}.vss`;
}

function requireSnapshots(deps: Deps): NonNullable<Storage['snapshot']> {
  const snapshot = deps.storage.snapshot;
  if (!snapshot) throw new ServiceError('not_supported', `Snapshots are taken of embedded storage; this server uses ${deps.storage.kind}. Back it up with the engine's own snapshots (docs/CASSANDRA.md) or \`vss export\`.`);
  return snapshot.bind(deps.storage);
}

/** Takes a snapshot while writes go on; answers when the archive is complete and on disk. */
export async function createSnapshot(deps: Deps): Promise<SnapshotView> {
  const snapshot = requireSnapshots(deps);
  const busy = running.get(deps.storage);
  if (busy) {
    throw new ServiceError('snapshot_in_progress', `Snapshot ${busy.name} is being taken (${Math.floor(busy.progress * 100)}%); one at a time.`, {
      extra: { in_progress: busy },
      headers: { 'retry-after': '10' },
    });
  }
  const now = new Date();
  const state: Running = { name: newName(now), started_at: now.toISOString(), progress: 0 };
  running.set(deps.storage, state);
  const dir = dirOf(deps);
  const staging = path.join(dir, `${STAGING_PREFIX}${state.name}`);
  try {
    await fs.mkdir(dir, { recursive: true, mode: DIR_MODE });
    await removeLeftovers(dir);
    await fs.mkdir(staging, { mode: DIR_MODE });
    const image = await snapshot(staging, (p) => (state.progress = p * 0.5));
    const createdAt = image.takenAt;
    const total = image.tables.reduce((n, t) => n + t.rows, 0);
    const target = path.join(dir, state.name);
    const manifest = await writeArchive(target, staging, image.members, { created_at: createdAt, storage: deps.storage.kind, rows: { total, tables: image.tables } }, (p) => (state.progress = 0.5 + p * 0.5));
    return viewOf(state.name, (await fs.stat(target)).size, manifest);
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
    running.delete(deps.storage);
  }
}

/** What a crash left: staging directories and temp archives (no snapshot is running: the caller holds the slot). */
async function removeLeftovers(dir: string): Promise<void> {
  removeDeadTemps(dir);
  for (const name of await fs.readdir(dir)) {
    if (name.startsWith(STAGING_PREFIX)) await fs.rm(path.join(dir, name), { recursive: true, force: true });
  }
}

export async function listSnapshots(deps: Deps): Promise<{ snapshots: SnapshotView[]; in_progress: Running | null }> {
  requireSnapshots(deps);
  let names: string[];
  try {
    names = (await fs.readdir(dirOf(deps))).filter((n) => SNAPSHOT_NAME.test(n)).sort();
  } catch {
    names = []; // none taken yet
  }
  const snapshots: SnapshotView[] = [];
  for (const name of names) {
    const file = path.join(dirOf(deps), name);
    try {
      snapshots.push(viewOf(name, (await fs.stat(file)).size, await readManifest(file)));
    } catch {
      // Removed meanwhile, or not readable as a snapshot: not listed.
    }
  }
  return { snapshots, in_progress: running.get(deps.storage) ?? null };
}

async function existing(deps: Deps, name: string): Promise<{ file: string; size: number }> {
  requireSnapshots(deps);
  const notFound = () => new ServiceError('not_found', `No snapshot named "${name}".`);
  if (!SNAPSHOT_NAME.test(name)) throw notFound();
  const file = path.join(dirOf(deps), name);
  try {
    return { file, size: (await fs.stat(file)).size };
  } catch {
    throw notFound();
  }
}

/** The archive's bytes as a stream (it can be far larger than memory). */
export async function openSnapshot(deps: Deps, name: string): Promise<{ name: string; size: number; stream: ReadStream }> {
  const { file, size } = await existing(deps, name);
  return { name, size, stream: createReadStream(file) };
}

export async function deleteSnapshot(deps: Deps, name: string): Promise<{ name: string; deleted: true }> {
  const { file } = await existing(deps, name);
  await fs.rm(file, { force: true });
  return { name, deleted: true };
}
