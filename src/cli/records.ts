/**
 * Reading import files into vector records: JSONL (one object a line), CSV (a header row;
 * columns key, text, vector, metadata, anything else goes into metadata) and Parquet (the same
 * columns). A record without a key gets `<file name>:<record number>` (blank lines not counted),
 * so importing the same file again (or resuming) upserts rather than duplicates. Values are taken
 * as they are or refused, never coerced: `[1, null]` is not a vector and `{"id": 1}` is not a key.
 */
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseCsv } from '../ingest/extract/index.ts';
import { UsageError } from './errors.ts';

export interface ImportRecord {
  key: string;
  vector?: number[];
  text?: string;
  metadata?: Record<string, unknown>;
}

/** A record and where the user finds it in the file ("line 12", or "row 3" in a Parquet file). */
export interface LocatedRecord {
  record: ImportRecord;
  where: string;
}

export class RecordError extends Error {
  constructor(readonly where: string, message: string) {
    super(`${where}: ${message}`);
    this.name = 'RecordError';
  }
}

const RESERVED = new Set(['key', 'vector', 'text', 'metadata']);
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

const absent = (v: unknown) => v === undefined || v === null || v === '';

function parseJsonField(s: string, field: string, where: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    throw new RecordError(where, `${field} is a string but not valid JSON`);
  }
}

/** Numbers as JSON gives them (or Parquet's float arrays and bigints); anything else is named by its index. */
function finiteNumbers(values: ArrayLike<unknown>, where: string): number[] {
  return Array.from(values, (x, i) => {
    const n = typeof x === 'bigint' ? Number(x) : x;
    if (typeof n !== 'number' || !Number.isFinite(n)) throw new RecordError(where, `vector[${i}] is ${typeof x === 'number' ? x : JSON.stringify(x)}, not a finite number`);
    return n;
  });
}

/** A CSV cell: `[1, 2]` as JSON, or numbers separated by commas, semicolons or spaces. */
function vectorFromString(s: string, where: string): unknown[] {
  const t = s.trim();
  if (t.startsWith('[')) {
    const parsed = parseJsonField(t, 'vector', where);
    if (!Array.isArray(parsed)) throw new RecordError(where, 'vector must be an array of numbers');
    return parsed;
  }
  return t.split(/[\s,;]+/).map((part, i) => {
    if (!DECIMAL.test(part)) throw new RecordError(where, `vector[${i}] is "${part}", not a number`);
    return Number(part);
  });
}

function parseVector(v: unknown, where: string): number[] | undefined {
  if (absent(v)) return undefined;
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return finiteNumbers(v as ArrayLike<unknown>, where);
  if (typeof v === 'string') return finiteNumbers(vectorFromString(v, where), where);
  throw new RecordError(where, 'vector must be an array of numbers');
}

function parseKey(v: unknown, where: string, fallbackKey: string): string {
  if (absent(v)) return fallbackKey;
  if (typeof v !== 'string') throw new RecordError(where, `key must be a string, not ${Array.isArray(v) ? 'an array' : typeof v}`);
  return v;
}

function parseText(v: unknown, where: string): string | undefined {
  if (absent(v)) return undefined;
  if (typeof v !== 'string') throw new RecordError(where, 'text must be a string');
  return v;
}

function parseMetadata(raw: Record<string, unknown>, where: string): Record<string, unknown> {
  const metadata: Record<string, unknown> = {};
  if (!absent(raw.metadata)) {
    const m = typeof raw.metadata === 'string' ? parseJsonField(raw.metadata, 'metadata', where) : raw.metadata;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) throw new RecordError(where, 'metadata must be an object');
    Object.assign(metadata, m);
  }
  for (const [k, v] of Object.entries(raw)) {
    if (!RESERVED.has(k) && v !== undefined) metadata[k] = typeof v === 'bigint' ? Number(v) : v;
  }
  return metadata;
}

export function toRecord(raw: Record<string, unknown>, where: string, fallbackKey: string): ImportRecord {
  const rec: ImportRecord = { key: parseKey(raw.key, where, fallbackKey) };
  const vector = parseVector(raw.vector, where);
  if (vector) rec.vector = vector;
  const text = parseText(raw.text, where);
  if (text !== undefined) rec.text = text;
  const metadata = parseMetadata(raw, where);
  if (Object.keys(metadata).length > 0) rec.metadata = metadata;
  if (!rec.vector && rec.text === undefined) throw new RecordError(where, 'needs a vector or a text');
  return rec;
}

export type Format = 'jsonl' | 'csv' | 'parquet';

export function formatOf(file: string): Format {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.jsonl' || ext === '.ndjson' || ext === '.json') return 'jsonl';
  if (ext === '.csv' || ext === '.tsv') return 'csv';
  if (ext === '.parquet') return 'parquet';
  throw new UsageError(`cannot tell the format of ${file}: use .jsonl, .csv or .parquet`);
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

async function* jsonlRecords(file: string): AsyncGenerator<LocatedRecord> {
  const base = path.basename(file);
  let lineNo = 0;
  let n = 0;
  for await (const text of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    lineNo++;
    // Editors on Windows start UTF-8 files with a byte order mark; it is not part of the first record.
    const line = lineNo === 1 ? text.replace(/^\uFEFF/, '') : text;
    if (!line.trim()) continue;
    n++;
    const where = `line ${lineNo}`;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      throw new RecordError(where, 'not valid JSON');
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new RecordError(where, 'must be a JSON object');
    yield { record: toRecord(raw as Record<string, unknown>, where, `${base}:${n}`), where };
  }
}

/** A row's line breaks inside quoted cells, so the rows after it are reported at their real line. */
const breaksIn = (row: string[]) => row.reduce((sum, cell) => sum + (cell.match(/\r\n|\r|\n/g)?.length ?? 0), 0);

async function* csvRecords(file: string): AsyncGenerator<LocatedRecord> {
  const base = path.basename(file);
  const text = await readFile(file, 'utf8');
  const rows = parseCsv(text.replace(/^\uFEFF/, ''), file.toLowerCase().endsWith('.tsv') ? '\t' : ',');
  const [header, ...body] = rows;
  if (!header) return;
  let lineNo = 1 + breaksIn(header);
  let n = 0;
  for (const row of body) {
    lineNo++;
    const where = `line ${lineNo}`;
    lineNo += breaksIn(row);
    if (row.length === 1 && row[0] === '') continue;
    n++;
    yield { record: toRecord(Object.fromEntries(header.map((h, i) => [h.trim(), row[i]])), where, `${base}:${n}`), where };
  }
}

async function* parquetRecords(file: string): AsyncGenerator<LocatedRecord> {
  const base = path.basename(file);
  // Loaded here, for .parquet files only: the CLI starts without it.
  const { asyncBufferFromFile, parquetReadObjects } = await import('hyparquet');
  const rows = (await parquetReadObjects({ file: await asyncBufferFromFile(file) })) as Record<string, unknown>[];
  let n = 0;
  for (const raw of rows) {
    n++;
    const where = `row ${n}`;
    yield { record: toRecord(raw, where, `${base}:${n}`), where };
  }
}

/** Records in file order; the first one is number 1. */
export function readRecords(file: string, format: Format): AsyncGenerator<LocatedRecord> {
  if (format === 'jsonl') return jsonlRecords(file);
  if (format === 'csv') return csvRecords(file);
  return parquetRecords(file);
}
