/**
 * `vss import`: records into a table in batches, with a progress bar on a terminal, and
 * resumable. After every acknowledged batch the count of records done is saved beside the file
 * (`<file>.vss-import.json`), with the server, table and file version it belongs to; the next run
 * of the same import to the same server starts after it. Batches are upserts by key, so a batch
 * sent twice (the one in flight when the server died) duplicates nothing. Vectors travel as
 * `vector_base64` (their float32 bytes): the server then parses no JSON numbers, which is most of
 * the work of a large batch.
 */
import { createHash } from 'node:crypto';
import { rename, rm, stat, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import cliProgress from 'cli-progress';
import { encodeFloat32Base64 } from '../platform/float32-base64.ts';
import { ApiError, LONG_TIMEOUT_MS, UnavailableError, type Client } from './client.ts';
import { Interrupted, UsageError } from './errors.ts';
import { countRecords, formatOf, readRecords, type ImportRecord, type LocatedRecord } from './records.ts';

export interface ImportOptions {
  keyspace: string;
  table: string;
  batch: number;
  restart: boolean;
  progress: boolean;
  model?: string;
  /** Aborted with an Interrupted reason when the user stops the import. */
  signal?: AbortSignal;
}

export interface ImportSummary {
  file: string;
  total: number;
  imported: number;
  resumedFrom: number;
  seconds: number;
}

/** What saved progress belongs to. No key, not even hashed: the server URL and table name the target. */
export interface Target {
  file: string;
  url: string;
  fingerprint: string;
  keyspace: string;
  table: string;
}

interface State extends Target {
  done: number;
}

/** An import that failed partway. `stateFile` is set when progress was saved that a re-run of the same command would resume from. */
export class ImportStopped extends Error {
  constructor(
    readonly reason: unknown,
    readonly stateFile: string | undefined,
  ) {
    super((reason as Error)?.message ?? String(reason));
    this.name = 'ImportStopped';
  }

  /** Whether running the same command again can get further: not for a bad record or a refused key, which would stop it at the same place. */
  get resumable(): boolean {
    const r = this.reason;
    const transient = r instanceof UnavailableError || r instanceof Interrupted || (r instanceof ApiError && (r.status >= 500 || r.status === 429));
    return transient && this.stateFile !== undefined;
  }
}

/** A record as sent: its vector as float32 bytes in base64 (an empty one as it is, for the server to name). */
export function toWire(rec: ImportRecord): Omit<ImportRecord, 'vector'> & { vector?: number[]; vector_base64?: string } {
  if (rec.vector === undefined || rec.vector.length === 0) return rec;
  const { vector, ...rest } = rec;
  return { ...rest, vector_base64: encodeFloat32Base64(vector) };
}

const stateFileOf = (file: string): string => `${file}.vss-import.json`;

export async function fingerprint(file: string): Promise<string> {
  const s = await stat(file);
  return createHash('sha256').update(`${s.size}:${s.mtimeMs}`).digest('hex').slice(0, 16);
}

/** One spelling per server, so `http://host:80/` and `http://host` share their progress. */
export const serverOf = (client: Client): string => new URL(client.baseUrl).href.replace(/\/+$/, '');

const sameTarget = (a: Target, b: Target): boolean => a.file === b.file && a.url === b.url && a.fingerprint === b.fingerprint && a.keyspace === b.keyspace && a.table === b.table;

async function saveState(path: string, state: State): Promise<void> {
  await writeFile(`${path}.tmp`, JSON.stringify(state));
  await rename(`${path}.tmp`, path);
}

/** Records already sent to this server's table from this version of the file, per the saved progress. */
async function resumePoint(statePath: string, target: Target, log: (line: string) => void): Promise<number> {
  let prev: State;
  try {
    prev = JSON.parse(await readFile(statePath, 'utf8')) as State;
  } catch {
    return 0; // no earlier run
  }
  if (sameTarget(prev, target)) return prev.done;
  log(`ignoring ${statePath}: it belongs to another server, table or version of the file`);
  return 0;
}

/** A batch larger than the server takes would be refused only after the whole file was read into it. */
async function checkBatchSize(client: Client, batch: number, signal?: AbortSignal): Promise<void> {
  const env = await client.get('/v1/env/', { signal }).catch((e: unknown) => {
    if (e instanceof ApiError && e.status === 404) return undefined; // an older server: it will say so itself
    throw e;
  });
  const limit = env?.limits?.batch_items;
  if (typeof limit === 'number' && batch > limit) throw new UsageError(`--batch ${batch} is more than the server takes in one request (at most ${limit})`);
}

/**
 * The server names a record by its index in the batch and by the wire's field names
 * (`/body/vectors/199/vector_base64`); the user knows the file's lines and their own fields (`line 1200, vector`).
 */
export function locateBatchError(err: ApiError, wheres: string[]): ApiError {
  const relocate = (p: string) =>
    p.replace(/^\/body\/vectors\/(\d+)(?:\/(.*))?$/, (whole, i: string, field: string | undefined) => {
      const where = wheres[Number(i)];
      if (where === undefined) return whole;
      return field ? `${where}, ${field.replace(/^vector_base64\b/, 'vector')}` : where;
    });
  const detail = err.detail.replace(/\/body\/vectors\/\d+(?:\/[^\s:;,]*)?/g, relocate);
  return new ApiError(err.status, err.code, detail, err.fieldErrors.map((f) => ({ path: relocate(f.path), message: f.message })));
}

/** What a batch loop of `resumableImport` is given: where to start, and how to report a batch done. */
export interface Progress {
  /** Items an earlier run of this import had done: skip them. */
  resumeFrom: number;
  /** After the server acknowledged `n` more items: saves the progress and moves the bar. */
  acknowledge(n: number): Promise<void>;
}

/**
 * The frame of a resumable import: the saved progress for this target, the batch size check, the
 * progress bar, progress saved after every acknowledged batch, and the saved progress removed at
 * the end. `count` says how many items the file holds; `send` sends them in batches.
 */
export async function resumableImport(
  client: Client,
  file: string,
  target: Target,
  opts: { batch: number; restart: boolean; progress: boolean; signal?: AbortSignal; unit: string },
  log: (line: string) => void,
  count: () => Promise<number>,
  send: (p: Progress) => Promise<void>,
): Promise<ImportSummary> {
  const statePath = stateFileOf(file);
  const resumeFrom = opts.restart ? 0 : await resumePoint(statePath, target, log);
  let started = 0;
  let done = resumeFrom;
  let total = 0;
  let bar: cliProgress.SingleBar | null = null;
  const acknowledge = async (n: number): Promise<void> => {
    done += n;
    await saveState(statePath, { ...target, done });
    const secs = (performance.now() - started) / 1000;
    bar?.update(done, { rate: Math.round((done - resumeFrom) / Math.max(secs, 0.001)) });
  };
  try {
    await checkBatchSize(client, opts.batch, opts.signal);
    total = await count();
    if (resumeFrom > 0) log(`resuming after ${opts.unit} ${resumeFrom} of ${total}`);
    bar = opts.progress
      ? new cliProgress.SingleBar({ format: ` {bar} {percentage}% | {value}/{total} ${opts.unit}s | {rate}/s | ETA {eta_formatted}`, hideCursor: true, stream: process.stderr }, cliProgress.Presets.shades_classic)
      : null;
    bar?.start(total, resumeFrom, { rate: 0 });
    started = performance.now();
    await send({ resumeFrom, acknowledge });
  } catch (e) {
    throw new ImportStopped(e, done > 0 ? statePath : undefined);
  } finally {
    // Also on Ctrl-C: the bar hid the cursor, and only stop() shows it again.
    bar?.stop();
  }
  await rm(statePath, { force: true });
  return { file, total, imported: done - resumeFrom, resumedFrom: resumeFrom, seconds: (performance.now() - started) / 1000 };
}

export async function importFile(client: Client, file: string, opts: ImportOptions, log: (line: string) => void): Promise<ImportSummary> {
  const format = formatOf(file);
  const target: Target = { file: path.resolve(file), url: serverOf(client), fingerprint: await fingerprint(file), keyspace: opts.keyspace, table: opts.table };
  return resumableImport(client, file, target, { ...opts, unit: 'record' }, log, () => countRecords(file, format), async ({ resumeFrom, acknowledge }) => {
    let batch: LocatedRecord[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const body = { keyspace: opts.keyspace, table: opts.table, vectors: batch.map((r) => toWire(r.record)), ...(opts.model ? { model_name: opts.model } : {}) };
      try {
        await client.post('/v1/vector/batch', body, { timeoutMs: LONG_TIMEOUT_MS, signal: opts.signal });
      } catch (e) {
        throw e instanceof ApiError ? locateBatchError(e, batch.map((r) => r.where)) : e;
      }
      const n = batch.length;
      batch = [];
      await acknowledge(n);
    };
    let n = 0;
    for await (const rec of readRecords(file, format)) {
      opts.signal?.throwIfAborted();
      n++;
      if (n <= resumeFrom) continue;
      batch.push(rec);
      if (batch.length >= opts.batch) await flush();
    }
    await flush();
  });
}
