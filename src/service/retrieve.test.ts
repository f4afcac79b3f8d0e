/**
 * retrieve() over a real embedded store: the lists come as refs, and only the rows kept are read,
 * as they are then (a row gone since it was listed gives its place to the next one).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Storage } from '../storage/api.ts';
import { openEmbeddedStorage } from '../storage/embedded/embedded-storage.ts';
import { DEFAULT_FUSION } from './fusion.ts';
import { retrieve, type Retrieval } from './retrieve.ts';

const D = 8;
const N = 40;
const vec = (i: number): Float32Array => Float32Array.from({ length: D }, (_, d) => Math.cos(i * 0.37 + d * 1.1) + (d === 0 ? 2 : 0));
const words = ['pump', 'seal', 'valve', 'motor', 'gasket', 'filter'];

describe('retrieve: refs first, then the rows kept', () => {
  let dir: string;
  let storage: Storage;
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'vss-retrieve-'));
    storage = await openEmbeddedStorage({ dataDir: dir, index: { saveEveryChanges: 1_000_000, saveEveryMs: 3_600_000, exactBelowRows: 1_000_000, segmentRows: 250_000 } });
    await storage.createKeyspace({ name: 'ks', owner: null });
    await storage.createTable({ keyspace: 'ks', name: 't', dimension: D, metric: 'cosine', model: null });
    await storage.upsertVectors('ks', 't', Array.from({ length: N }, (_, i) => ({ key: `k${i}`, vector: vec(i), metadata: { i }, text: `${words[i % 6]} ${words[(i * 7) % 6]} row ${i}` })));
  });
  after(async () => {
    await storage.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  const ask = (over: Partial<Retrieval> = {}): Retrieval => ({
    keyspace: 'ks', table: 't', mode: 'hybrid', vector: vec(3), text: 'pump seal', metric: 'cosine', candidates: 30, limit: 5, includeVector: false, fusion: DEFAULT_FUSION, ...over,
  });

  /** The store, counting the refs each readMatches call asks for, and running `between` after the lists are made. */
  function watched(between: () => Promise<void>): { s: Storage; reads: number[] } {
    const reads: number[] = [];
    let lists = 0;
    const after = async <T>(p: Promise<T>): Promise<T> => {
      const r = await p;
      if (++lists === 2) await between();
      return r;
    };
    const s: Storage = {
      ...storage,
      searchRefs: (...a) => after(storage.searchRefs(...a)),
      lexicalSearchRefs: (...a) => after(storage.lexicalSearchRefs(...a)),
      readMatches: (ks, t, refs, o) => (reads.push(refs.length), storage.readMatches(ks, t, refs, o)),
    };
    return { s, reads };
  }

  it('reads the rows of the final matches only, in one call, and answers them with their rows', async () => {
    const { s, reads } = watched(async () => {});
    const { matches } = await retrieve(s, ask());
    assert.deepEqual(reads, [5]);
    assert.equal(matches.length, 5);
    for (const m of matches) {
      const i = Number(m.key.slice(1));
      assert.deepEqual(m.metadata, { i });
      assert.equal(m.text, `${words[i % 6]} ${words[(i * 7) % 6]} row ${i}`);
      assert.equal(m.vector, undefined);
    }
    const withVectors = await retrieve(storage, ask({ includeVector: true }));
    for (const m of withVectors.matches) assert.deepEqual([...m.vector!], [...vec(Number(m.key.slice(1)))]);
  });

  it('drops a row deleted after the lists were made, and the next one in fused order takes its place', async () => {
    const all = (await retrieve(storage, ask({ limit: 30 }))).matches;
    const gone = [all[0].key, all[3].key];
    const { s } = watched(async () => void (await storage.deleteVectors('ks', 't', gone)));
    const { matches } = await retrieve(s, ask());
    const expected = all.filter((m) => !gone.includes(m.key)).slice(0, 5);
    assert.deepEqual(matches.map((m) => [m.key, m.score, m.scores]), expected.map((m) => [m.key, m.score, m.scores]));
    await storage.upsertVectors('ks', 't', gone.map((key) => ({ key, vector: vec(Number(key.slice(1))), metadata: { i: Number(key.slice(1)) }, text: all.find((m) => m.key === key)!.text })));
  });

  it('breaks fused ties by key where the lists gave no keys, reading the tied rows with the rest: one read', async () => {
    // A small table's lexical list (FTS5's) and the semantic list come without keys; every row
    // holding 'pump' or 'seal' has one BM25 score here, so rows tie at the same fused score.
    const { s, reads } = watched(async () => {});
    const { matches } = await retrieve(s, ask({ limit: 20 }));
    assert.deepEqual(reads, [20]);
    let ties = 0;
    for (let i = 1; i < matches.length; i++) {
      if (matches[i].score !== matches[i - 1].score) continue;
      ties++;
      assert.ok(matches[i - 1].key < matches[i].key, `${matches[i - 1].key} before ${matches[i].key}, tied at ${matches[i].score}`);
    }
    assert.ok(ties >= 2, `ties among the matches: ${ties}`);
  });

  it('MMR reads its candidates with their vectors, without rows deleted meanwhile', async () => {
    const all = (await retrieve(storage, ask({ limit: 30 }))).matches;
    const gone = all[1].key;
    const { s, reads } = watched(async () => void (await storage.deleteVectors('ks', 't', [gone])));
    const { matches } = await retrieve(s, ask({ mmr: { diversity: 0.5, candidates: 20 } }));
    assert.deepEqual(reads, [20]);
    assert.equal(matches.length, 5);
    assert.ok(!matches.some((m) => m.key === gone));
    assert.ok(matches.every((m) => m.vector === undefined && typeof m.text === 'string'));
  });

  it("asks for a hybrid search's lexical list where the semantic search leaves room for it, after it at the latest, and at once while the query is embedded", async () => {
    const want = (await retrieve(storage, ask())).matches.map((m) => [m.key, m.score]);
    /** The store, logging when each list is asked for and answered; `beside` says when searchRefs calls startBeside. */
    const logged = (beside: 'at once' | 'never') => {
      const log: string[] = [];
      const s: Storage = {
        ...storage,
        searchRefs: async (ks, t, q) => {
          log.push('semantic asked');
          if (beside === 'at once') q.startBeside?.();
          const found = await storage.searchRefs(ks, t, { ...q, startBeside: undefined });
          log.push('semantic answered');
          return found;
        },
        lexicalSearchRefs: (ks, t, q) => (log.push('lexical asked'), storage.lexicalSearchRefs(ks, t, q)),
      };
      return { s, log };
    };
    const run = async (beside: 'at once' | 'never', over: Partial<Retrieval> = {}) => {
      const { s, log } = logged(beside);
      const got = (await retrieve(s, ask(over))).matches.map((m) => [m.key, m.score]);
      assert.deepEqual(got, want);
      return log;
    };
    assert.deepEqual(await run('at once'), ['semantic asked', 'lexical asked', 'semantic answered']);
    assert.deepEqual(await run('never'), ['semantic asked', 'semantic answered', 'lexical asked']);
    // The model's promise of the vector: the lexical list is asked for before the vector is awaited.
    let embedded!: (v: Float32Array) => void;
    const { s, log } = logged('at once');
    const pending = retrieve(s, ask({ vector: new Promise<Float32Array>((done) => (embedded = done)) }));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(log, ['lexical asked']);
    embedded(vec(3));
    assert.deepEqual((await pending).matches.map((m) => [m.key, m.score]), want);
    assert.deepEqual(log, ['lexical asked', 'semantic asked', 'semantic answered']);
  });
});
