// The warm-up thread of db-warmer.ts: holds read-only connections of its own (each its own map
// of the file) and, on each message, reads the rows the search path reads, in slices with rests:
// every row ('all'), or only those past the highest id it has read so far ('new').
import { parentPort, workerData } from 'node:worker_threads';
import type BetterSqlite3 from 'better-sqlite3';
import { Database } from './sqlite-driver.ts';
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

/** What a pass reads: every row, or the rows written since the last pass (ids above any it read). */
export type WarmScope = 'all' | 'new';

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
const open = (): BetterSqlite3.Database => {
  const c = new Database(data.file, { readonly: true, fileMustExist: true });
  c.pragma(`mmap_size = ${data.mmapBytes}`);
  return c;
};
const db = open();
const searches = new YieldSignal(data.searches);
const pause = new Int32Array(new SharedArrayBuffer(4));
let seen = searches.searches;
/**
 * Per table, where the next 'new' pass starts and the highest id read so far. After a 'new' pass
 * the next starts where it did: the rows it read may have been in the WAL (read from there, not
 * through the map) until a checkpoint moved them into the file. An 'all' pass runs once writes
 * have stopped, when the WAL holds little.
 */
const reach = new Map<string, [number, number]>();
/**
 * The connections of 'new' passes, each still holding the pages it read mapped. SQLite drops a
 * connection's whole map when a read transaction begins after another connection wrote, so each
 * such pass reads in one transaction on a connection of its own and never reads again. They are
 * closed once an 'all' pass has mapped every row with no write in between.
 */
const holders: BetterSqlite3.Database[] = [];
/**
 * At most this many holders (each two open files): past it the oldest is closed, and its rows may
 * be paged out until the next 'all' pass. At one every 20 s (db-warmer.ts) that is ~10 minutes
 * of loading, by when the file is past the 2 GiB that SQLite maps anyway.
 */
const MAX_HOLDERS = 32;

/** Reads `scope`'s rows of each table through `conn`, in slices with rests. */
function read(conn: BetterSqlite3.Database, scope: WarmScope): number {
  let rows = 0;
  for (const t of TABLES) {
    const max = (conn.prepare(`SELECT max(id) FROM ${t.name}`).pluck().get() as number | null) ?? 0;
    const slice = conn.prepare(`SELECT count(*), ${t.touch} FROM ${t.name} WHERE id > ? AND id <= ?`).raw(true);
    const from = scope === 'new' ? Math.min(reach.get(t.name)?.[0] ?? 0, max) : 0;
    for (let lo = from; lo < max; lo += data.sliceRows) {
      const t0 = performance.now();
      rows += (slice.get(lo, lo + data.sliceRows) as number[])[0];
      // Half the time at most, and far less while searches run: they need the cores more.
      const now = searches.searches;
      const busy = now !== seen;
      seen = now;
      if (busy) searches.restTaken();
      Atomics.wait(pause, 0, 0, busy ? data.busyRestMs : performance.now() - t0);
    }
    reach.set(t.name, [scope === 'new' ? (reach.get(t.name)?.[1] ?? 0) : max, max]);
  }
  return rows;
}

function pass(scope: WarmScope): WarmPass {
  const started = Date.now();
  let rows = 0;
  try {
    if (scope === 'new') {
      const conn = open();
      try {
        // One read transaction: the writes of a load go on meanwhile, and each would drop the map.
        conn.prepare('BEGIN').run();
        rows = read(conn, 'new');
        conn.prepare('COMMIT').run();
        // Only pages read through the map stay: what it cached (pages read from the WAL) is let go.
        conn.pragma('shrink_memory');
      } catch (e) {
        conn.close();
        throw e;
      }
      holders.push(conn);
      while (holders.length > MAX_HOLDERS) holders.shift()!.close();
    } else {
      const version = () => db.pragma('data_version', { simple: true }) as number;
      const before = version();
      // Slices in transactions of their own, so that checkpoints are never held up long.
      rows = read(db, 'all');
      if (version() === before) for (const h of holders.splice(0)) h.close();
    }
    return { rows, ms: Date.now() - started };
  } catch (e) {
    return { rows, ms: Date.now() - started, error: String((e as Error)?.message) };
  }
}

parentPort!.on('message', (scope: WarmScope) => parentPort!.postMessage(pass(scope)));
