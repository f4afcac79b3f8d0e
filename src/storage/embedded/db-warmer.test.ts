import { describe, it } from 'node:test';
import { Database } from './sqlite-driver.ts';
import assert from 'node:assert/strict';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { DbWarmer } from './db-warmer.ts';
import { YieldSignal } from '../../platform/yield-signal.ts';
import { openEmbeddedStorage, type EmbeddedStorage } from './embedded-storage.ts';
import { tempDirForSuite } from '../../platform/temp-dir-test-support.ts';

/** Resident bytes of this process's mappings of `file` (Linux: /proc/self/smaps). */
function mappedResidentBytes(file: string): number {
  let total = 0;
  let inFile = false;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inFile = line.trimEnd().endsWith(` ${file}`);
    else if (inFile && line.startsWith('Rss:')) total += Number(/(\d+) kB/.exec(line)![1]) * 1024;
  }
  return total;
}

/**
 * Bytes of `file` that some mapping in this process has resident, each page counted once however
 * many connections map it: the pages present in /proc/self/pagemap over each of the file's maps.
 */
function distinctMappedBytes(file: string): number {
  const pages = new Set<number>();
  const pagemap = openSync('/proc/self/pagemap', 'r');
  try {
    for (const line of readFileSync('/proc/self/maps', 'utf8').split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) \S+ \S+\s+(.*)$/.exec(line);
      if (!m || m[4] !== file) continue;
      const start = parseInt(m[1], 16) / 4096;
      const count = parseInt(m[2], 16) / 4096 - start;
      const first = parseInt(m[3], 16) / 4096;
      const entries = Buffer.alloc(count * 8);
      readSync(pagemap, entries, 0, entries.length, start * 8);
      // Bit 63 of an entry: the page is present.
      for (let i = 0; i < count; i++) if (entries.readBigUInt64LE(i * 8) >> 63n === 1n) pages.add(first + i);
    }
  } finally {
    closeSync(pagemap);
  }
  return pages.size * 4096;
}

/** The nice value of a thread, from its stat file (field 19). */
const niceOf = (stat: string): number => Number(readFileSync(stat, 'utf8').split(') ')[1].split(' ')[16]);
const threadNices = (): number[] => readdirSync('/proc/self/task').map((t) => niceOf(`/proc/self/task/${t}/stat`));

/** Moves the rows from the WAL into the file (only the file is mapped), through a connection of its own. */
function checkpoint(file: string): void {
  const other = new Database(file);
  other.pragma('wal_checkpoint(TRUNCATE)');
  other.close();
}

/** `count` rows of 64 dimensions keyed `${prefix}${i}`, their vectors sin(seed + 64 i + d). */
const rowsOf = (prefix: string, count: number, seed = 0) =>
  Array.from({ length: count }, (_, i) => ({ key: `${prefix}${i}`, vector: Float32Array.from({ length: 64 }, (_, d) => Math.sin(seed + i * 64 + d)), metadata: { i }, text: `${prefix} row ${i}` }));

const openStorage = (dataDir: string, mmapBytes: number) => openEmbeddedStorage({ dataDir, mmapBytes, index: { saveEveryChanges: 1e9, saveEveryMs: 3.6e6, exactBelowRows: 0 } });

/** Upserts `rows` into ks.t, 500 at a time. */
async function write(s: EmbeddedStorage, rows: ReturnType<typeof rowsOf>): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) await s.upsertVectors('ks', 't', rows.slice(i, i + 500));
}

async function filled(dataDir: string, mmapBytes: number): Promise<EmbeddedStorage> {
  const s = await openStorage(dataDir, mmapBytes);
  await s.createKeyspace({ name: 'ks', owner: null });
  await s.createTable({ keyspace: 'ks', name: 't', dimension: 64, metric: 'cosine', model: null });
  await write(s, rowsOf('k', 3_000));
  return s;
}

describe('database warm-up', { skip: !existsSync('/proc/self/smaps') && 'needs /proc/self/smaps' }, () => {
  const dir = tempDirForSuite('vss-warm-');

  it('reads every searched row through a map that stays resident', async () => {
    const dataDir = path.join(dir(), 'mapped');
    const s = await filled(dataDir, 2 ** 31);
    try {
      const file = path.join(dataDir, 'vss.db');
      // Move the rows from the WAL into the file: only the file is mapped.
      const other = new Database(file);
      other.pragma('wal_checkpoint(TRUNCATE)');
      other.close();
      const pass = await s.warmDatabase();
      assert.equal(pass.error, undefined);
      // Each row of vector_payloads and of vectors, once.
      assert.equal(pass.rows, 6_000);
      const dbBytes = (await fs.stat(file)).size;
      assert.ok(dbBytes > 1_000_000, `database of ${dbBytes} bytes`);
      assert.ok(mappedResidentBytes(file) >= 0.9 * dbBytes, `mapped ${mappedResidentBytes(file)} of ${dbBytes} bytes`);
    } finally {
      await s.close();
    }
  });

  it('slows down to a slice per rest while searches are being served', async () => {
    const dataDir = path.join(dir(), 'busy');
    // Closed first: nothing else on this thread, so the search count moves every 2 ms as meant.
    await (await filled(dataDir, 2 ** 31)).close();
    // 6,000 rows in slices of 100: 60 slices, each a rest of 20 ms apart while searches run.
    const searches = new YieldSignal();
    const warmer = new DbWarmer(path.join(dataDir, 'vss.db'), 2 ** 31, searches, undefined, { sliceRows: 100, busyRestMs: 20 });
    try {
      const quiet = await warmer.warm();
      assert.equal(searches.rests, 0, 'no search, no rest');
      searches.searchStarted(); // before the first slice too
      const searching = setInterval(() => searches.searchStarted(), 2);
      const busy = await warmer.warm().finally(() => clearInterval(searching));
      assert.equal(quiet.rows, 6_000);
      assert.equal(busy.rows, 6_000);
      // Its thread runs at the lowest priority (thread-priority.ts), and only it: this thread does not.
      assert.equal(threadNices().filter((n) => n === 19).length, 1);
      assert.notEqual(niceOf('/proc/thread-self/stat'), 19);
      assert.ok(busy.ms >= 50 * 20, `busy pass took ${busy.ms} ms`);
      assert.ok(searches.rests >= 50, `rests counted: ${searches.rests}`);
      assert.ok(quiet.ms * 3 < busy.ms, `quiet pass took ${quiet.ms} ms, busy ${busy.ms} ms`);
    } finally {
      await warmer.close();
    }
  });

  it('reads the rows written since its last pass, and those of that pass again', async () => {
    const dataDir = path.join(dir(), 'new-rows');
    // Written through a connection of its own that maps nothing: only the warmer maps the file.
    const s = await filled(dataDir, 0);
    const file = path.join(dataDir, 'vss.db');
    const warmer = new DbWarmer(file, 2 ** 31, new YieldSignal());
    try {
      await s.close();
      checkpoint(file);
      assert.equal((await warmer.warm()).rows, 6_000);
      const reopened = await openStorage(dataDir, 0);
      await write(reopened, rowsOf('n', 3_000, 1e6));
      await reopened.close();
      checkpoint(file);
      const before = distinctMappedBytes(file);
      const fresh = await warmer.warm('new');
      assert.equal(fresh.error, undefined);
      // The 3,000 new rows of vector_payloads and of vectors, not the 3,000 old ones.
      assert.equal(fresh.rows, 6_000);
      const dbBytes = (await fs.stat(file)).size;
      assert.ok(before < 0.7 * dbBytes, `mapped ${before} of ${dbBytes} bytes before`);
      assert.ok(distinctMappedBytes(file) >= 0.9 * dbBytes, `mapped ${distinctMappedBytes(file)} of ${dbBytes} bytes`);
      // The next reads them again (they may have been in the WAL), and then nothing more.
      assert.equal((await warmer.warm('new')).rows, 6_000);
      assert.equal((await warmer.warm('new')).rows, 0);
    } finally {
      await warmer.close();
    }
  });

  it('follows a file that keeps growing, without waiting for it to stop', async () => {
    const dataDir = path.join(dir(), 'growing');
    const s = await filled(dataDir, 0);
    const file = path.join(dataDir, 'vss.db');
    const warmer = new DbWarmer(file, 2 ** 31, new YieldSignal(), undefined, { checkMs: 100, newPassMs: 300, growthShare: Infinity });
    try {
      // A batch every 150 ms (no pass over every row is ever due here: growthShare), until the
      // file as it was six batches ago is mapped: at most 30 s, for the warmer's thread runs at
      // the lowest priority and a busy machine may keep it waiting.
      const sizes: number[] = [];
      let mapped = 0;
      let b = 0;
      for (; b < 200; b++) {
        await s.upsertVectors('ks', 't', rowsOf(`g${b}-`, 300, (b + 1) * 1e5));
        // The storage's own checkpoints come every ~4 MB of changes: more than this test writes.
        checkpoint(file);
        sizes.push((await fs.stat(file)).size);
        await new Promise((r) => setTimeout(r, 150));
        mapped = distinctMappedBytes(file);
        if (b >= 10 && mapped >= 0.9 * sizes[b - 6]) break;
      }
      assert.ok(b < 200, `mapped ${mapped} bytes of the ${sizes[b - 7]} the file held six batches before the last, while writes went on`);
    } finally {
      await warmer.close();
      await s.close();
    }
  });

  it('maps nothing when the map size is 0', async () => {
    const dataDir = path.join(dir(), 'plain');
    const s = await filled(dataDir, 0);
    try {
      const pass = await s.warmDatabase();
      assert.equal(pass.rows, 0);
      assert.ok(pass.error);
      assert.equal(mappedResidentBytes(path.join(dataDir, 'vss.db')), 0);
      assert.equal((await s.search('ks', 't', { vector: Float32Array.from({ length: 64 }, (_, d) => Math.sin(64 + d)), metric: 'cosine', candidates: 10, limit: 1 }))[0].key, 'k1');
    } finally {
      await s.close();
    }
  });
});
