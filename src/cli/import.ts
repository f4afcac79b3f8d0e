/**
 * `vss import`: records into a table in batches, with a progress bar on a terminal, and
 * resumable. After every acknowledged batch the count of records done is saved beside the file
 * (`<file>.vss-import.json`); the next run of the same import starts after it. Batches are
 * upserts by key, so a batch sent twice (the one in flight when the server died) duplicates
 * nothing. Vectors travel as `vector_base64` (their float32 bytes): the server then parses no JSON
 * numbers, which is most of the work of a large batch.
 */
import { createHash } from 'node:crypto';
import { rename, rm, stat, readFile, writeFile } from 'node:fs/promises';
import cliProgress from 'cli-progress';
import { encodeFloat32Base64 } from '../float32-base64.ts';
import type { Client } from './client.ts';
import { countRecords, formatOf, readRecords, type ImportRecord } from './records.ts';

export interface ImportOptions {
  keyspace: string;
  table: string;
  batch: number;
  restart: boolean;
  progress: boolean;
  model?: string;
}

export interface ImportSummary {
  file: string;
  total: number;
  imported: number;
  resumedFrom: number;
  seconds: number;
}

interface State {
  file: string;
  fingerprint: string;
  keyspace: string;
  table: string;
  done: number;
}

/** A record as sent: its vector as float32 bytes in base64 (an empty one as it is, for the server to name). */
export function toWire(rec: ImportRecord): Omit<ImportRecord, 'vector'> & { vector?: number[]; vector_base64?: string } {
  if (rec.vector === undefined || rec.vector.length === 0) return rec;
  const { vector, ...rest } = rec;
  return { ...rest, vector_base64: encodeFloat32Base64(vector) };
}

export const stateFileOf = (file: string): string => `${file}.vss-import.json`;

async function fingerprint(file: string): Promise<string> {
  const s = await stat(file);
  return createHash('sha256').update(`${s.size}:${s.mtimeMs}`).digest('hex').slice(0, 16);
}

async function saveState(path: string, state: State): Promise<void> {
  await writeFile(`${path}.tmp`, JSON.stringify(state));
  await rename(`${path}.tmp`, path);
}

export async function importFile(client: Client, file: string, opts: ImportOptions, log: (line: string) => void): Promise<ImportSummary> {
  const format = formatOf(file);
  const statePath = stateFileOf(file);
  const fp = await fingerprint(file);
  let resumeFrom = 0;
  if (!opts.restart) {
    try {
      const prev = JSON.parse(await readFile(statePath, 'utf8')) as State;
      if (prev.fingerprint === fp && prev.keyspace === opts.keyspace && prev.table === opts.table) resumeFrom = prev.done;
      else log(`ignoring ${statePath}: it belongs to another version of the file or another table`);
    } catch {
      // No earlier run.
    }
  }
  const total = await countRecords(file, format);
  if (resumeFrom > 0) log(`resuming after record ${resumeFrom} of ${total}`);

  const bar = opts.progress
    ? new cliProgress.SingleBar({ format: ' {bar} {percentage}% | {value}/{total} records | {rate}/s | ETA {eta_formatted}', hideCursor: true, stream: process.stderr }, cliProgress.Presets.shades_classic)
    : null;
  bar?.start(total, resumeFrom, { rate: 0 });
  const started = performance.now();
  let done = resumeFrom;
  let n = 0;
  let batch: ImportRecord[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    await client.post('/v1/vector/batch', { keyspace: opts.keyspace, table: opts.table, vectors: batch.map(toWire), ...(opts.model ? { model_name: opts.model } : {}) });
    done += batch.length;
    batch = [];
    await saveState(statePath, { file, fingerprint: fp, keyspace: opts.keyspace, table: opts.table, done });
    const secs = (performance.now() - started) / 1000;
    bar?.update(done, { rate: Math.round((done - resumeFrom) / Math.max(secs, 0.001)) });
  };
  try {
    for await (const rec of readRecords(file, format)) {
      n++;
      if (n <= resumeFrom) continue;
      batch.push(rec);
      if (batch.length >= opts.batch) await flush();
    }
    await flush();
  } finally {
    bar?.stop();
  }
  await rm(statePath, { force: true });
  return { file, total, imported: done - resumeFrom, resumedFrom: resumeFrom, seconds: (performance.now() - started) / 1000 };
}
