/**
 * Reading import files into vector records: JSONL (one object a line), CSV (a header row;
 * columns key, text, vector, metadata, anything else goes into metadata) and Parquet (the same
 * columns). A record without a key gets `<file name>:<record number>`, so importing the same
 * file again (or resuming) upserts rather than duplicates.
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseCsv } from '../ingest/extract.ts';

export interface ImportRecord {
  key: string;
  vector?: number[];
  text?: string;
  metadata?: Record<string, unknown>;
}

export class RecordError extends Error {
  constructor(readonly record: number, message: string) {
    super(`record ${record}: ${message}`);
  }
}

const RESERVED = new Set(['key', 'vector', 'text', 'metadata']);

function parseVector(v: unknown, n: number): number[] | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (Array.isArray(v)) return v.map(Number);
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number>);
  if (typeof v === 'string') {
    const s = v.trim();
    const parts = s.startsWith('[') ? (JSON.parse(s) as unknown[]) : s.split(/[\s,;]+/);
    return parts.map(Number);
  }
  throw new RecordError(n, 'vector must be an array of numbers');
}

export function toRecord(raw: Record<string, unknown>, n: number, fallbackKey: string): ImportRecord {
  const metadata: Record<string, unknown> = {};
  if (raw.metadata !== undefined && raw.metadata !== null && raw.metadata !== '') {
    const m = typeof raw.metadata === 'string' ? (JSON.parse(raw.metadata) as unknown) : raw.metadata;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw new RecordError(n, 'metadata must be an object');
    Object.assign(metadata, m);
  }
  for (const [k, v] of Object.entries(raw)) {
    if (!RESERVED.has(k) && v !== undefined) metadata[k] = typeof v === 'bigint' ? Number(v) : v;
  }
  const rec: ImportRecord = { key: raw.key === undefined || raw.key === null || raw.key === '' ? fallbackKey : String(raw.key) };
  const vector = parseVector(raw.vector, n);
  if (vector) rec.vector = vector;
  if (typeof raw.text === 'string' && raw.text !== '') rec.text = raw.text;
  if (Object.keys(metadata).length > 0) rec.metadata = metadata;
  if (!rec.vector && rec.text === undefined) throw new RecordError(n, 'needs a vector or a text');
  return rec;
}

export type Format = 'jsonl' | 'csv' | 'parquet';

export function formatOf(file: string): Format {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  if (ext === '.csv' || ext === '.tsv') return 'csv';
  if (ext === '.parquet') return 'parquet';
  throw new Error(`cannot tell the format of ${file}: use .jsonl, .csv or .parquet`);
}

/** How many records the file holds (for the progress bar), without parsing them. */
export async function countRecords(file: string, format: Format): Promise<number> {
  if (format === 'jsonl') {
    let n = 0;
    for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) if (line.trim()) n++;
    return n;
  }
  let n = 0;
  for await (const _ of readRecords(file, format)) n++;
  return n;
}

/** Records in file order; the first one is number 1. */
export async function* readRecords(file: string, format: Format): AsyncGenerator<ImportRecord> {
  const base = path.basename(file);
  let n = 0;
  if (format === 'jsonl') {
    for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
      if (!line.trim()) continue;
      n++;
      let raw: unknown;
      try {
        raw = JSON.parse(line);
      } catch {
        throw new RecordError(n, 'not valid JSON');
      }
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new RecordError(n, 'must be a JSON object');
      yield toRecord(raw as Record<string, unknown>, n, `${base}:${n}`);
    }
    return;
  }
  if (format === 'csv') {
    const text = await readFile(file, 'utf8');
    const rows = parseCsv(text.replace(/^\uFEFF/, ''), file.toLowerCase().endsWith('.tsv') ? '\t' : ',');
    const [header, ...body] = rows;
    if (!header) return;
    for (const row of body) {
      if (row.length === 1 && row[0] === '') continue;
      n++;
      yield toRecord(Object.fromEntries(header.map((h, i) => [h.trim(), row[i]])), n, `${base}:${n}`);
    }
    return;
  }
  // Loaded here, for .parquet files only: the CLI starts without it.
  const { asyncBufferFromFile, parquetReadObjects } = await import('hyparquet');
  const rows = (await parquetReadObjects({ file: await asyncBufferFromFile(file) })) as Record<string, unknown>[];
  for (const raw of rows) {
    n++;
    yield toRecord(raw, n, `${base}:${n}`);
  }
}
