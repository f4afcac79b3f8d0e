// The warm-up thread of db-warmer.ts: holds its own read-only connection (and so its own map of
// the file) and, on each message, reads every row the search path reads, in slices with rests.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { lowerThisThreadPriority } from '../../platform/thread-priority.ts';
import { YieldSignal } from '../../platform/yield-signal.ts';

export interface WarmerData {
  file: string;
  mmapBytes: number;
  sliceRows: number;
  busyRestMs: number;
  /** A YieldSignal's shared counters. */
  searches: Int32Array;
}

export interface WarmPass {
  rows: number;
  ms: number;
  error?: string;
}

/** Tables the search path reads by row id, and what reads every column of a slice's rows. */
const TABLES = [
  { name: 'vector_payloads', touch: 'sum(length(vector)) + sum(length(text))' },
  { name: 'vectors', touch: 'sum(length(key)) + sum(length(metadata))' },
];

const data = workerData as WarmerData;
lowerThisThreadPriority();
const db = new Database(data.file, { readonly: true, fileMustExist: true });
db.pragma(`mmap_size = ${data.mmapBytes}`);
const searches = new YieldSignal(data.searches);
const pause = new Int32Array(new SharedArrayBuffer(4));
let seen = searches.searches;

function pass(): WarmPass {
  const started = Date.now();
  let rows = 0;
  try {
    for (const t of TABLES) {
      const max = (db.prepare(`SELECT max(id) FROM ${t.name}`).pluck().get() as number | null) ?? 0;
      const slice = db.prepare(`SELECT count(*), ${t.touch} FROM ${t.name} WHERE id > ? AND id <= ?`).raw(true);
      for (let lo = 0; lo < max; lo += data.sliceRows) {
        const t0 = performance.now();
        rows += (slice.get(lo, lo + data.sliceRows) as number[])[0];
        // Half the time at most, and far less while searches run: they need the cores more.
        const now = searches.searches;
        const busy = now !== seen;
        seen = now;
        if (busy) searches.restTaken();
        Atomics.wait(pause, 0, 0, busy ? data.busyRestMs : performance.now() - t0);
      }
    }
    return { rows, ms: Date.now() - started };
  } catch (e) {
    return { rows, ms: Date.now() - started, error: String((e as Error)?.message) };
  }
}

parentPort!.on('message', () => parentPort!.postMessage(pass()));
