/**
 * `vss import` of a file in the export format (`vss export`; docs/API.md, "Export format"): the
 * whole file is checked first (its header, that every line is JSON, and that its `end` line's
 * counts match, so a cut-off export is refused before anything is written), then its lines go to
 * `POST /v1/import` in batches, with a progress bar, resumable as other imports (progress saved
 * beside the file after every acknowledged batch; every write is an upsert).
 */
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ApiError, LONG_TIMEOUT_MS, type Client } from './client.ts';
import { fingerprint, resumableImport, serverOf, type ImportSummary, type Target } from './import.ts';
import { RecordError } from './records.ts';

const FORMAT = 'vss-export';
const VERSION = 1;
/** A request's lines stop growing past this many bytes (a stored file goes alone, whatever its size). */
const BATCH_BYTES = 8 * 2 ** 20;

export interface PortableImportOptions {
  /** Into this keyspace; absent: the one the export came from. */
  keyspace?: string;
  batch: number;
  restart: boolean;
  progress: boolean;
  signal?: AbortSignal;
}

interface Header {
  format: string;
  version: number;
  keyspace: string;
}

async function* lines(file: string): AsyncGenerator<string> {
  const rl = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  for await (const line of rl) if (line.trim() !== '') yield line;
}

/** True when the file's first line is an export header. */
export async function isExportFile(file: string): Promise<boolean> {
  for await (const line of lines(file)) {
    try {
      return (JSON.parse(line) as Header)?.format === FORMAT;
    } catch {
      return false;
    }
  }
  return false;
}

/** Reads the whole export once: its header and how many items it holds, refusing a damaged or cut-off one. */
async function checkExport(file: string): Promise<{ header: Header; items: number }> {
  let header: Header | null = null;
  const counts: Record<string, number> = { table: 0, row: 0, metadata: 0, file: 0 };
  let end: Record<string, unknown> | null = null;
  let n = 0;
  for await (const line of lines(file)) {
    n++;
    let x: { type?: string; format?: string; version?: number };
    try {
      x = JSON.parse(line);
    } catch {
      throw new RecordError(`line ${n}`, 'is not JSON: the export is damaged');
    }
    if (n === 1) {
      if (x?.format !== FORMAT) throw new RecordError('line 1', `is not a ${FORMAT} header`);
      if (x.version !== VERSION) throw new RecordError('line 1', `export format version ${JSON.stringify(x.version)}; this vss reads version ${VERSION}`);
      header = x as Header;
    } else if (end !== null) {
      throw new RecordError(`line ${n}`, 'follows the end line: the export is damaged');
    } else if (x?.type === 'end') {
      end = x as Record<string, unknown>;
    } else if (typeof x?.type === 'string' && x.type in counts) {
      counts[x.type]++;
    } else {
      throw new RecordError(`line ${n}`, `has no known type (table, row, metadata, file or end)`);
    }
  }
  if (header === null) throw new RecordError('line 1', 'missing: the file is empty');
  if (end === null) throw new RecordError(`line ${n}`, 'is the last line, and no end line follows: the export was cut off');
  const plural: Record<string, string> = { table: 'tables', row: 'rows', metadata: 'metadata', file: 'files' };
  for (const [type, count] of Object.entries(counts)) {
    if (end[plural[type]] !== count) throw new RecordError('end line', `says ${String(end[plural[type]])} ${plural[type]}, the file holds ${count}: the export is damaged`);
  }
  return { header, items: n - 2 };
}

/** The server names an item by its index in the request (`/body/items/3/...`); the user knows the file's lines. */
function locate(err: ApiError, lineOf: number[]): ApiError {
  const relocate = (p: string) => p.replace(/\/body\/items\/(\d+)/g, (whole, i: string) => (lineOf[Number(i)] === undefined ? whole : `line ${lineOf[Number(i)]}`));
  return new ApiError(err.status, err.code, relocate(err.detail), err.fieldErrors.map((f) => ({ path: relocate(f.path), message: f.message })));
}

export async function importExport(client: Client, file: string, opts: PortableImportOptions, log: (line: string) => void): Promise<ImportSummary & { keyspace: string }> {
  const { header, items: total } = await checkExport(file);
  const keyspace = opts.keyspace ?? header.keyspace;
  const target: Target = { file: path.resolve(file), url: serverOf(client), fingerprint: await fingerprint(file), keyspace, table: '*' };
  const summary = await resumableImport(client, file, target, { ...opts, unit: 'item' }, log, async () => total, async ({ resumeFrom, acknowledge }) => {
    if (resumeFrom === 0) {
      // A keyspace that exists already is fine (an import into it).
      await client.post('/v1/keyspaces/create', { keyspace }, { signal: opts.signal }).catch((e: unknown) => {
        if (!(e instanceof ApiError && e.code === 'already_exists')) throw e;
      });
    }
    let batch: string[] = [];
    let lineOf: number[] = [];
    let bytes = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      // The lines go as they are: the server checks every field.
      const body = `{"keyspace":${JSON.stringify(keyspace)},"items":[${batch.join(',')}]}`;
      try {
        await client.request('POST', '/v1/import', { raw: body, contentType: 'application/json', timeoutMs: LONG_TIMEOUT_MS, signal: opts.signal });
      } catch (e) {
        throw e instanceof ApiError ? locate(e, lineOf) : e;
      }
      const n = batch.length;
      batch = [];
      lineOf = [];
      bytes = 0;
      await acknowledge(n);
    };
    let n = 0;
    for await (const line of lines(file)) {
      opts.signal?.throwIfAborted();
      n++;
      const item = n - 1; // items are numbered from the line after the header
      if (n === 1 || item > total || item <= resumeFrom) continue;
      const isFile = (JSON.parse(line) as { type: string }).type === 'file';
      if (isFile || bytes + line.length > BATCH_BYTES) await flush();
      batch.push(line);
      lineOf.push(n);
      bytes += line.length;
      if (isFile || batch.length >= opts.batch) await flush();
    }
    await flush();
  });
  return { ...summary, keyspace };
}
