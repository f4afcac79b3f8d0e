/**
 * A seeded, randomized differential case of the storage contract: hundreds of random
 * operations (batch and single upserts, deletes by key and by filter, metadata records) against
 * the store, mirrored in a plain in-memory model written here independently of the backends
 * (its own filter matcher and float64 brute force), and checked against the model as it goes:
 * counts with and without a filter, gets of present and deleted keys, exact searches
 * (candidates >= rows) with and without a filter for every metric, scans, metadata records.
 *
 * The operations are generated up front from the seed (the generator runs its own copy of the
 * model), then replayed, so a failing run is reproduced by its seed alone:
 *   VSS_RANDOM_CONTRACT_SEED=<seed> [VSS_RANDOM_CONTRACT_OPS=<n>] node --import tsx --test <backend test file>
 * `generateOps` and `runOps` are exported for shrinking a failure to a few operations.
 *
 * Everything stays within what both backends promise: tables far below the Cassandra backend's
 * exact-scan threshold, ties in score never relied upon, no order expected from a scan.
 *
 * What its first runs found, both fixed since: on the embedded backend, range filters on numbers
 * past 2^53 such as 2^60 (JSON text "1152921504606847000") compared SQLite's int64 of the stored
 * text with the bound double, so {n: {$lte: 2^60}} missed a row holding 2^60 (this seed hit it
 * at operation 119); and after a few hundred deletes of indexed rows usearch 2.25's key table
 * filled with tombstones and Index.remove spun for ever (src/index/ann-churn.test.ts).
 */
import assert from 'node:assert/strict';
import { bruteScore } from './brute-score.case.ts';
import type { Filter, Json, Metadata, MetadataRecord, Metric, Storage, StoredMatch } from './api.ts';

export const RANDOM_CONTRACT_SEED = 3;

// ---------------------------------------------------------------- PRNG

/** mulberry32: a small deterministic PRNG (uniform in [0, 1)). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Rand {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)];
  }
  /** `k` distinct elements (fewer when there are fewer). */
  sample<T>(xs: readonly T[], k: number): T[] {
    const copy = [...xs];
    const out: T[] = [];
    while (out.length < k && copy.length > 0) out.push(copy.splice(Math.floor(this.next() * copy.length), 1)[0]);
    return out;
  }
}

// ---------------------------------------------------------------- operations

export interface TableSpec {
  name: string;
  dimension: number;
  metric: Metric;
}

export const RANDOM_KEYSPACE = 'rnd';
export const RANDOM_TABLES: readonly TableSpec[] = [
  { name: 'rnd_cosine', dimension: 8, metric: 'cosine' },
  { name: 'rnd_dot', dimension: 12, metric: 'dot_product' },
  { name: 'rnd_l2', dimension: 16, metric: 'euclidean' },
];

interface RowSpec {
  key: string;
  /** float32 values (already rounded). */
  vector: number[];
  metadata: Metadata;
  text: string | null;
}

interface SearchSpec {
  vector: number[];
  metric: Metric;
  /** exact: candidates = max(1, rows) + extra; approx: candidates = extra (validity checks only). */
  mode: 'exact' | 'approx';
  extra: number;
  limit: number;
  filter?: Filter;
  includeVector: boolean;
}

export type Op =
  | { op: 'upsert'; t: number; rows: RowSpec[]; note: string }
  /** One row has a wrong dimension: dimension_mismatch, nothing written. */
  | { op: 'upsertBad'; t: number; rows: RowSpec[] }
  | { op: 'delete'; t: number; keys: string[] }
  | { op: 'deleteByFilter'; t: number; filter: Filter }
  | { op: 'records'; records: MetadataRecord[] }
  /** Time passing between requests (a backend's background work, such as indexing, may run). */
  | { op: 'pause'; ms: number }
  | { op: 'check'; t: number; counts: (Filter | null)[]; gets: string[]; searches: SearchSpec[]; scanPage: number | null; records: { table: string; files: string[] } | null };

// ---------------------------------------------------------------- the model

interface ModelRow {
  vector: Float32Array;
  metadata: Metadata;
  text: string | null;
}

class Model {
  readonly tables: Map<string, ModelRow>[] = RANDOM_TABLES.map(() => new Map());
  /** `${table}\u0000${source_file}` -> record (one keyspace). */
  readonly records = new Map<string, MetadataRecord>();

  apply(op: Op): { deleted?: number } {
    switch (op.op) {
      case 'upsert':
        for (const r of op.rows) this.tables[op.t].set(r.key, { vector: Float32Array.from(r.vector), metadata: structuredClone(r.metadata), text: r.text });
        return {};
      case 'upsertBad':
        return {};
      case 'delete': {
        let n = 0;
        for (const k of new Set(op.keys)) if (this.tables[op.t].delete(k)) n++;
        return { deleted: n };
      }
      case 'deleteByFilter': {
        let n = 0;
        for (const [k, row] of this.tables[op.t]) {
          if (matchFilter(row.metadata, op.filter)) {
            this.tables[op.t].delete(k);
            n++;
          }
        }
        return { deleted: n };
      }
      case 'records':
        for (const r of op.records) this.records.set(`${r.table}\u0000${r.source_file}`, { ...r });
        return {};
      case 'check':
      case 'pause':
        return {};
    }
  }
}

// ---------------------------------------------------------------- filter semantics (independent)

/**
 * The documented filter semantics (api.ts, docs/API.md, index/filter.ts's header), written again:
 * dotted paths through nested objects only (never into arrays); on an array field a comparison
 * matches when any element does and $ne/$nin when none does; type-strict comparisons (numbers
 * with numbers, strings with strings by code point, booleans only by equality); `null` equality
 * matches a missing field; $ne/$nin match a missing field; $exists: true matches null.
 */
function matchFilter(doc: Metadata, filter: Filter): boolean {
  for (const [k, v] of Object.entries(filter)) {
    if (k === '$and') {
      if (!(v as Filter[]).every((f) => matchFilter(doc, f))) return false;
    } else if (k === '$or') {
      if (!(v as Filter[]).some((f) => matchFilter(doc, f))) return false;
    } else if (!matchField(getPath(doc, k.split('.')), v)) {
      return false;
    }
  }
  return true;
}

const isObj = (v: unknown): v is { [k: string]: Json } => typeof v === 'object' && v !== null && !Array.isArray(v);

function getPath(doc: Metadata, path: string[]): Json | undefined {
  let cur: Json | undefined = doc;
  for (const seg of path) {
    if (!isObj(cur) || !Object.prototype.hasOwnProperty.call(cur, seg)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

function matchField(value: Json | undefined, cond: Json): boolean {
  if (!isObj(cond)) return eq(value, cond);
  for (const [op, arg] of Object.entries(cond)) {
    let ok: boolean;
    switch (op) {
      case '$eq':
        ok = eq(value, arg);
        break;
      case '$ne':
        ok = !eq(value, arg);
        break;
      case '$in':
        ok = (arg as Json[]).some((a) => eq(value, a));
        break;
      case '$nin':
        ok = !(arg as Json[]).some((a) => eq(value, a));
        break;
      case '$exists':
        ok = (value !== undefined) === arg;
        break;
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        ok = anyElement(value, (x) => {
          let d: number;
          if (typeof arg === 'number' && typeof x === 'number') d = x - arg;
          else if (typeof arg === 'string' && typeof x === 'string') d = cmpCodePoints(x, arg);
          else return false;
          return op === '$gt' ? d > 0 : op === '$gte' ? d >= 0 : op === '$lt' ? d < 0 : d <= 0;
        });
        break;
      default:
        throw new Error(`model: unknown operator ${op}`);
    }
    if (!ok) return false;
  }
  return true;
}

function eq(value: Json | undefined, arg: Json): boolean {
  if (value === undefined) return arg === null;
  return anyElement(value, (x) => x === arg);
}

function anyElement(value: Json | undefined, f: (x: Json) => boolean): boolean {
  if (value === undefined) return false;
  return Array.isArray(value) ? value.some(f) : f(value);
}

function cmpCodePoints(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

// ---------------------------------------------------------------- scoring (independent, float64)

const better = (metric: Metric, a: number, b: number): number => (metric === 'euclidean' ? a - b : b - a);

function brute(rows: Map<string, ModelRow>, q: Float32Array, metric: Metric, limit: number, filter?: Filter): { key: string; score: number }[] {
  const out: { key: string; score: number }[] = [];
  for (const [key, r] of rows) if (filter === undefined || matchFilter(r.metadata, filter)) out.push({ key, score: bruteScore(metric, q, r.vector) });
  out.sort((a, b) => better(metric, a.score, b.score));
  return out.slice(0, limit);
}

// ---------------------------------------------------------------- generation

/** Strings: code-point order differs from UTF-16 order between U+E000..U+FFFF ('ｱ', '\uE000') and astral ones ('😀', '𝒜'); 'é' twice (NFC, NFD). */
const STRINGS = ['a', 'b', 'c', 'A', '', 'é', 'e\u0301', 'ｱ', '\uE000', '😀', '𝒜', 'a b', 'ab', "it's", 'x"y', 'a\u0000b', 'zz'] as const;
/** Metadata numbers besides small integers: awkward floats, and integers beyond 2^53 (JSON text of 2^60 is "1152921504606847000"). */
export const NUMBERS: readonly number[] = [0, 1, 2, 3, -1, 5, 10, 0.5, -2.5, 0.1 + 0.2, 1 / 3, 1e-7, 1e21, 2 ** 53, 2 ** 60, -(2 ** 60), 123456789.125];
/** The pool of the generation under way (generateOps is synchronous). */
let numberPool: readonly number[] = NUMBERS;
const TEXTS = [null, null, null, 'hello', 'ünïcödé 😀', "quote ' \" \\ done", '', 'x'.repeat(700)] as const;
const SOURCE_FILES = ['a.txt', 'b.pdf', 'ü.md', 'x y.csv', "it's.txt", '😀.json'] as const;
/** Filterable paths; 'x.y' is a nested path, which a flat key "x.y" must not satisfy. */
const PATHS = ['g', 'g', 'n', 'n', 'b', 'tags', 'tags', 'nested.x', 'nested.s', 'nested', 'we"ird', "it's", 'sp ace', 'ключ', 'x.y', 'x', 'missing'] as const;

/** Per table: the keys that operations draw from (odd ones included). */
function keyPool(t: number): string[] {
  const odd = ["k'q", 'a b', 'ключ', '😀', '%', '_', 'x#1', 'k"dq', 'K0', 'k0 ', '\\', 'a/b', '..', 'L'.repeat(400), 'é', 'e\u0301', 'ｱ', `t${t}`];
  return [...Array.from({ length: 130 }, (_, i) => `k${i}`), ...odd];
}

function genNumber(r: Rand): number {
  const k = r.next();
  if (k < 0.6) return r.int(-3, 10);
  if (k < 0.9) return r.pick(numberPool);
  return (r.next() - 0.5) * 10 ** r.int(-3, 6);
}

function genScalarOfAnyType(r: Rand): Json {
  const k = r.int(0, 9);
  if (k < 4) return r.pick(STRINGS);
  if (k < 8) return genNumber(r);
  if (k < 9) return r.chance(0.5);
  return null;
}

function genMetadata(r: Rand): Metadata {
  if (r.chance(0.15)) return {};
  const m: Metadata = {};
  if (r.chance(0.75)) m.g = r.chance(0.9) ? r.pick(['a', 'b', 'c', 'a', 'b', 'é', 'e\u0301', '😀', '𝒜', 'ｱ', '\uE000', '']) : genScalarOfAnyType(r);
  if (r.chance(0.75)) m.n = r.chance(0.85) ? genNumber(r) : r.pick<Json>(['3', true, null, '10']);
  if (r.chance(0.5)) m.b = r.chance(0.85) ? r.chance(0.5) : null;
  if (r.chance(0.5)) {
    const tags: Json[] = r.sample(STRINGS, r.int(0, 3));
    if (r.chance(0.2)) tags.push(genScalarOfAnyType(r));
    if (r.chance(0.05)) tags.push(['a']);
    if (r.chance(0.05)) tags.push({ x: 1 });
    m.tags = tags;
  }
  if (r.chance(0.4)) {
    const k = r.int(0, 9);
    if (k < 7) {
      const o: { [k: string]: Json } = {};
      if (r.chance(0.7)) o.x = genNumber(r);
      if (r.chance(0.6)) o.s = r.pick(STRINGS);
      m.nested = o;
    } else if (k < 8) m.nested = 'flat';
    else if (k < 9) m.nested = [{ x: 1 }, { x: 2 }];
    else m.nested = null;
  }
  if (r.chance(0.2)) m['we"ird'] = r.pick(STRINGS);
  if (r.chance(0.2)) m["it's"] = genNumber(r);
  if (r.chance(0.2)) m['sp ace'] = r.chance(0.5);
  if (r.chance(0.2)) m['ключ'] = r.pick(STRINGS);
  if (r.chance(0.2)) m['x.y'] = genNumber(r);
  if (r.chance(0.2)) m.x = r.chance(0.8) ? { y: genNumber(r) } : genNumber(r);
  return m;
}

/** Scalars stored at a path in a table's rows now (array elements included), for filters that hit them exactly. */
type Seen = (path: string) => Json[];

function valueFor(r: Rand, path: string, seen: Seen): Json {
  if (r.chance(0.35)) {
    const xs = seen(path);
    if (xs.length > 0) return r.pick(xs);
  }
  if (r.chance(0.12)) return genScalarOfAnyType(r);
  switch (path) {
    case 'n':
    case 'nested.x':
    case "it's":
    case 'x.y':
    case 'x':
      return genNumber(r);
    case 'b':
    case 'sp ace':
      return r.chance(0.5);
    case 'missing':
    case 'nested':
      return genScalarOfAnyType(r);
    default:
      return r.pick(STRINGS);
  }
}

function comparableFor(r: Rand, path: string, seen: Seen): number | string {
  const v = valueFor(r, path, seen);
  if (typeof v === 'number' || typeof v === 'string') return v;
  return r.chance(0.5) ? genNumber(r) : r.pick(STRINGS);
}

function genCondition(r: Rand, path: string, seen: Seen): Json {
  switch (r.int(0, 11)) {
    case 0:
    case 1:
      return valueFor(r, path, seen);
    case 2:
      return { $eq: valueFor(r, path, seen) };
    case 3:
      return { $ne: valueFor(r, path, seen) };
    case 4:
      return { $gt: comparableFor(r, path, seen) };
    case 5:
      return { $gte: comparableFor(r, path, seen) };
    case 6:
      return { $lt: comparableFor(r, path, seen) };
    case 7:
      return { $lte: comparableFor(r, path, seen) };
    case 8:
      return { $in: Array.from({ length: r.int(0, 4) }, () => valueFor(r, path, seen)) };
    case 9:
      return { $nin: Array.from({ length: r.int(0, 3) }, () => valueFor(r, path, seen)) };
    case 10:
      return { $exists: r.chance(0.5) };
    default:
      return { $gte: comparableFor(r, path, seen), $lt: comparableFor(r, path, seen) };
  }
}

function genFilter(r: Rand, seen: Seen, depth = 0): Filter {
  if (r.chance(0.02)) return {};
  const k = r.int(0, 9);
  if (depth < 2 && k === 8) return { $and: Array.from({ length: r.int(1, 3) }, () => genFilter(r, seen, depth + 1)) };
  if (depth < 2 && k === 9) return { $or: Array.from({ length: r.int(1, 3) }, () => genFilter(r, seen, depth + 1)) };
  const f: Filter = {};
  for (const p of r.sample(PATHS, k < 6 ? 1 : 2)) f[p] = genCondition(r, p, seen);
  return f;
}

function genVector(r: Rand, d: number, metric: Metric): number[] {
  const scale = metric === 'cosine' ? 1 : r.pick([1, 1, 1, 1, 0.01, 30]);
  return Array.from({ length: d }, () => Math.fround((r.next() * 2 - 1) * scale));
}

interface GenOptions {
  ops: number;
  /** Every this many operations, a check of every table (and the records); also at the end. */
  fullCheckEvery: number;
  /** Chance of a light check of the table an operation just touched. */
  lightCheckChance: number;
  /** Replaces NUMBERS (e.g. to look past a known disagreement while hunting for others). */
  numbers?: readonly number[];
}

/** The operations of a run, generated with their own copy of the model. */
export function generateOps(seed: number, opts: GenOptions): Op[] {
  const r = new Rand(seed);
  numberPool = opts.numbers ?? NUMBERS;
  const model = new Model();
  const pools = RANDOM_TABLES.map((_, t) => keyPool(t));
  const ops: Op[] = [];
  const push = (op: Op): void => {
    model.apply(op);
    ops.push(op);
  };

  const present = (t: number): string[] => [...model.tables[t].keys()];
  const seenIn =
    (t: number): Seen =>
    (path) => {
      const out: Json[] = [];
      for (const row of model.tables[t].values()) {
        const v = getPath(row.metadata, path.split('.'));
        for (const x of Array.isArray(v) ? v : [v]) if (x === null || (typeof x !== 'object' && x !== undefined)) out.push(x);
      }
      return out;
    };
  const absent = (t: number): string[] => pools[t].filter((k) => !model.tables[t].has(k));
  const newRow = (t: number, key: string): RowSpec => ({
    key,
    vector: genVector(r, RANDOM_TABLES[t].dimension, RANDOM_TABLES[t].metric),
    metadata: genMetadata(r),
    text: r.pick(TEXTS),
  });
  /** A rewrite of a stored key: a new vector, new metadata and text, or both. */
  const rewrite = (t: number, key: string): RowSpec => {
    const old = model.tables[t].get(key)!;
    const fresh = newRow(t, key);
    const k = r.int(0, 2);
    if (k === 0) return { ...fresh, metadata: structuredClone(old.metadata), text: old.text };
    if (k === 1) return { ...fresh, vector: Array.from(old.vector) };
    return fresh;
  };

  const searchSpec = (t: number, mode: 'exact' | 'approx', withFilter: boolean): SearchSpec => {
    const spec = RANDOM_TABLES[t];
    const rows = present(t);
    let vector = genVector(r, spec.dimension, spec.metric);
    if (rows.length > 0 && r.chance(0.15)) vector = Array.from(model.tables[t].get(r.pick(rows))!.vector);
    // A zero query: every row ties under cosine (score 0) and dot product (0); ties are not ordered.
    else if (r.chance(0.04)) vector = new Array<number>(spec.dimension).fill(0);
    const metric = r.chance(0.15) ? r.pick(RANDOM_TABLES.map((x) => x.metric).filter((m) => m !== spec.metric)) : spec.metric;
    const n = rows.length;
    return {
      vector,
      metric,
      mode,
      extra: mode === 'approx' ? r.int(1, 3) : r.pick([0, 0, 1, 7, 500]),
      limit: r.pick([1, 2, 3, 5, 10, Math.max(1, n), n + 10]),
      filter: withFilter ? genFilter(r, seenIn(t)) : undefined,
      includeVector: r.chance(0.3),
    };
  };

  const check = (t: number, full: boolean): void => {
    const counts: (Filter | null)[] = [null, genFilter(r, seenIn(t)), genFilter(r, seenIn(t))];
    const gets = full ? [...pools[t]] : [...r.sample(present(t), 3), ...r.sample(absent(t), 2)];
    const searches: SearchSpec[] = [];
    const nExact = full ? 3 : 2;
    for (let i = 0; i < nExact; i++) searches.push(searchSpec(t, 'exact', false));
    searches.push(searchSpec(t, 'exact', true));
    if (full || r.chance(0.3)) searches.push(searchSpec(t, 'approx', false));
    const records = full || r.chance(0.2) ? { table: r.pick(RANDOM_TABLES).name, files: r.sample(SOURCE_FILES, r.int(1, SOURCE_FILES.length)) } : null;
    push({ op: 'check', t, counts, gets, searches, scanPage: full || r.chance(0.1) ? r.pick([1, 7, 50, 1000]) : null, records });
  };

  for (let i = 0; i < opts.ops; i++) {
    const t = r.int(0, RANDOM_TABLES.length - 1);
    const k = r.next();
    const size = model.tables[t].size;
    if (k < 0.36 || size < 5) {
      // A batch: new keys, rewrites of stored ones, sometimes a new key twice (the last wins) or a stored key twice.
      const rows: RowSpec[] = [];
      const notes: string[] = [];
      const n = r.chance(0.08) ? r.int(30, 60) : r.int(2, 20);
      const fresh = r.sample(absent(t), n);
      const old = r.sample(present(t), r.int(0, Math.min(n, 8)));
      for (const key of fresh.slice(0, n - old.length)) rows.push(newRow(t, key));
      for (const key of old) rows.push(rewrite(t, key));
      for (let j = rows.length - 1; j > 0; j--) {
        const s = r.int(0, j);
        [rows[j], rows[s]] = [rows[s], rows[j]];
      }
      if (rows.length > 0 && r.chance(0.3)) {
        const newKeys = rows.filter((x) => !model.tables[t].has(x.key)).map((x) => x.key);
        if (newKeys.length > 0) {
          const key = r.pick(newKeys);
          rows.push(newRow(t, key));
          notes.push(`new key ${JSON.stringify(key)} twice`);
        }
      }
      if (old.length > 0 && r.chance(0.15)) {
        const key = r.pick(old);
        rows.splice(r.int(0, rows.length), 0, rewrite(t, key));
        notes.push(`stored key ${JSON.stringify(key)} twice`);
      }
      if (rows.length > 0) push({ op: 'upsert', t, rows, note: notes.join('; ') });
    } else if (k < 0.5) {
      // A single write: a new key or a rewrite.
      const row = r.chance(0.5) && absent(t).length > 0 ? newRow(t, r.pick(absent(t))) : rewrite(t, r.pick(present(t)));
      push({ op: 'upsert', t, rows: [row], note: 'single' });
    } else if (k < 0.64) {
      // Now and then many keys at once (more than the Cassandra backend reads in one IN query).
      const keys = r.chance(0.04) ? r.sample(pools[t], r.int(100, 130)) : [...r.sample(present(t), r.int(0, 4)), ...r.sample(absent(t), r.int(0, 2))];
      if (keys.length > 0 && r.chance(0.2)) keys.push(r.pick(keys));
      push({ op: 'delete', t, keys });
    } else if (k < 0.74) {
      // Deletes by filter that would empty most of the table are redrawn (a few times).
      let filter = genFilter(r, seenIn(t));
      for (let tries = 0; tries < 4; tries++) {
        const hit = [...model.tables[t].values()].filter((x) => matchFilter(x.metadata, filter)).length;
        if (hit <= Math.max(3, size / 3)) break;
        filter = genFilter(r, seenIn(t));
      }
      push({ op: 'deleteByFilter', t, filter });
    } else if (k < 0.78) {
      const records: MetadataRecord[] = Array.from({ length: r.int(1, 4) }, () => ({
        keyspace: RANDOM_KEYSPACE,
        table: r.pick(RANDOM_TABLES).name,
        source_file: r.pick(SOURCE_FILES),
        raw_value: r.pick(['', 'raw', `v${r.int(0, 999)}`, '😀 raw']),
        source_type: r.pick(['txt', 'pdf', 'md']),
        processing_details: JSON.stringify({ chunks: r.int(0, 9) }),
      }));
      push({ op: 'records', records });
    } else if (k < 0.82) {
      push({ op: 'pause', ms: r.pick([0, 5, 30]) });
      continue;
    } else if (k < 0.84) {
      const rows = [newRow(t, r.pick(pools[t])), newRow(t, r.pick(pools[t]))];
      rows.splice(r.int(0, 2), 0, { ...newRow(t, r.pick(pools[t])), vector: genVector(r, RANDOM_TABLES[t].dimension + r.pick([-1, 1]), RANDOM_TABLES[t].metric) });
      push({ op: 'upsertBad', t, rows });
    } else {
      check(t, false);
      continue;
    }
    if (r.chance(opts.lightCheckChance)) check(t, false);
    if ((i + 1) % opts.fullCheckEvery === 0) for (let u = 0; u < RANDOM_TABLES.length; u++) check(u, true);
  }
  for (let u = 0; u < RANDOM_TABLES.length; u++) check(u, true);
  return ops;
}

// ---------------------------------------------------------------- replay and checks

const VECTOR_EPS = 1e-6;
const SCORE_EPS = 1e-5;
/** Scores closer than this are ties: their order is not checked. */
const TIE_EPS = 1e-9;

function sameVector(got: Float32Array | undefined, want: Float32Array, what: string): void {
  assert.ok(got instanceof Float32Array, `${what}: not a Float32Array`);
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) assert.ok(Math.abs(got[i] - want[i]) <= VECTOR_EPS, `${what}: [${i}] ${got[i]} != ${want[i]}`);
}

export function describeOp(op: Op): string {
  const short = (x: unknown): string => {
    const s = JSON.stringify(x);
    return s.length > 300 ? `${s.slice(0, 300)}...` : s;
  };
  switch (op.op) {
    case 'upsert':
      return `upsert t${op.t} ${op.rows.length} rows [${op.rows.map((x) => JSON.stringify(x.key).slice(0, 20)).join(', ')}]${op.note ? ` (${op.note})` : ''}`;
    case 'upsertBad':
      return `upsert (bad dimension) t${op.t} [${op.rows.map((x) => `${JSON.stringify(x.key).slice(0, 20)}/${x.vector.length}`).join(', ')}]`;
    case 'delete':
      return `delete t${op.t} ${short(op.keys.map((k) => k.slice(0, 20)))}`;
    case 'deleteByFilter':
      return `deleteByFilter t${op.t} ${short(op.filter)}`;
    case 'records':
      return `upsertMetadata ${short(op.records.map((x) => [x.table, x.source_file, x.raw_value]))}`;
    case 'pause':
      return `pause ${op.ms} ms`;
    case 'check':
      return `check t${op.t}: ${op.gets.length} gets, ${op.counts.length} counts, ${op.searches.length} searches${op.scanPage ? `, scan by ${op.scanPage}` : ''}${op.records ? ', records' : ''}`;
  }
}

const toRow = (x: RowSpec) => ({ key: x.key, vector: Float32Array.from(x.vector), metadata: structuredClone(x.metadata), text: x.text });

async function checkSearch(storage: Storage, model: Model, t: number, s: SearchSpec, what: string): Promise<void> {
  const spec = RANDOM_TABLES[t];
  const rows = model.tables[t];
  const q = Float32Array.from(s.vector);
  const candidates = s.mode === 'exact' ? Math.max(1, rows.size) + s.extra : s.extra;
  const limit = Math.min(s.limit, candidates);
  const got: StoredMatch[] = await storage.search(RANDOM_KEYSPACE, spec.name, {
    vector: q,
    metric: s.metric,
    candidates,
    limit,
    ...(s.filter !== undefined ? { filter: s.filter } : {}),
    includeVector: s.includeVector,
  });
  const tag = `${what} search ${s.mode} ${s.metric} candidates=${candidates} limit=${limit}${s.filter ? ` filter=${JSON.stringify(s.filter)}` : ''}`;
  assert.ok(got.length <= limit, `${tag}: ${got.length} matches > limit`);
  assert.equal(new Set(got.map((g) => g.key)).size, got.length, `${tag}: a key twice: ${got.map((g) => g.key).join(',')}`);
  // Every match: a stored row (matching the filter), its exact score, its current metadata, text, vector.
  got.forEach((g, i) => {
    const row = rows.get(g.key);
    assert.ok(row, `${tag}: match ${i} ${JSON.stringify(g.key)} is not stored (deleted or never written)`);
    if (s.filter) assert.ok(matchFilter(row.metadata, s.filter), `${tag}: match ${JSON.stringify(g.key)} does not match the filter (metadata ${JSON.stringify(row.metadata)})`);
    const want = bruteScore(s.metric, q, row.vector);
    assert.ok(Math.abs(g.score - want) <= SCORE_EPS, `${tag}: ${JSON.stringify(g.key)} scores ${g.score}, its stored vector ${want}`);
    assert.deepStrictEqual(g.metadata, row.metadata, `${tag}: metadata of ${JSON.stringify(g.key)}`);
    assert.equal(g.text, row.text, `${tag}: text of ${JSON.stringify(g.key)}`);
    if (s.includeVector) sameVector(g.vector, row.vector, `${tag}: vector of ${JSON.stringify(g.key)}`);
    else assert.equal(g.vector, undefined, `${tag}: a vector nobody asked for`);
    if (i > 0) assert.ok(better(s.metric, got[i - 1].score, g.score) <= TIE_EPS, `${tag}: not best first at ${i}`);
  });
  if (s.mode === 'approx') return;
  const want = brute(rows, q, s.metric, limit, s.filter);
  const show = (xs: { key: string; score: number }[]) => xs.map((x) => `${JSON.stringify(x.key).slice(0, 24)}:${x.score.toFixed(6)}`).join(' ');
  assert.equal(got.length, want.length, `${tag}: ${got.length} matches, the model has ${want.length}\n  got:  ${show(got)}\n  want: ${show(want)}`);
  got.forEach((g, i) => {
    const tie = Math.abs(g.score - want[i].score) <= TIE_EPS;
    assert.ok(g.key === want[i].key || tie, `${tag}: match ${i} is ${JSON.stringify(g.key)}, the model says ${JSON.stringify(want[i].key)}\n  got:  ${show(got)}\n  want: ${show(want)}`);
    assert.ok(Math.abs(g.score - want[i].score) <= SCORE_EPS, `${tag}: score ${i} ${g.score} vs ${want[i].score}`);
  });
}

/** Replays `ops` on `storage` (which must hold no keyspace `rnd`), checking it against a fresh model. */
export async function runOps(storage: Storage, ops: Op[], onOp?: (i: number, op: Op) => void): Promise<void> {
  const model = new Model();
  await storage.createKeyspace({ name: RANDOM_KEYSPACE, owner: null });
  for (const spec of RANDOM_TABLES) await storage.createTable({ keyspace: RANDOM_KEYSPACE, name: spec.name, dimension: spec.dimension, metric: spec.metric, model: null });
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    onOp?.(i, op);
    const what = `op #${i}`;
    const name = (t: number) => RANDOM_TABLES[t].name;
    switch (op.op) {
      case 'upsert':
        await storage.upsertVectors(RANDOM_KEYSPACE, name(op.t), op.rows.map(toRow));
        break;
      case 'upsertBad':
        await assert.rejects(storage.upsertVectors(RANDOM_KEYSPACE, name(op.t), op.rows.map(toRow)), (e: unknown) => {
          assert.equal((e as { code?: unknown }).code, 'dimension_mismatch', `${what}: a batch with a wrong dimension: ${String(e)}`);
          return true;
        });
        break;
      case 'delete': {
        const n = await storage.deleteVectors(RANDOM_KEYSPACE, name(op.t), op.keys);
        const want = model.apply(op).deleted;
        assert.equal(n, want, `${what}: deleteVectors answered ${n}, the model deleted ${want} (keys ${JSON.stringify(op.keys)})`);
        continue;
      }
      case 'deleteByFilter': {
        const want = [...model.tables[op.t]].filter(([, r]) => matchFilter(r.metadata, op.filter)).map(([k]) => k);
        const n = await storage.deleteByFilter(RANDOM_KEYSPACE, name(op.t), op.filter);
        model.apply(op);
        assert.equal(n, want.length, `${what}: deleteByFilter ${JSON.stringify(op.filter)} answered ${n}, the model deleted ${want.length}: ${JSON.stringify(want)}`);
        continue;
      }
      case 'records':
        await storage.upsertMetadata(op.records);
        break;
      case 'pause':
        await new Promise((resolve) => setTimeout(resolve, op.ms));
        break;
      case 'check': {
        const rows = model.tables[op.t];
        for (const f of op.counts) {
          const got = await storage.countVectors(RANDOM_KEYSPACE, name(op.t), f ?? undefined);
          const want = f === null ? rows.size : [...rows.values()].filter((r) => matchFilter(r.metadata, f)).length;
          const which = f === null ? '' : [...rows].filter(([, r]) => matchFilter(r.metadata, f)).map(([k]) => k);
          assert.equal(got, want, `${what}: count${f === null ? '' : ` ${JSON.stringify(f)}`}: store ${got}, model ${want} ${JSON.stringify(which)}`);
        }
        for (const key of op.gets) {
          const got = await storage.getVector(RANDOM_KEYSPACE, name(op.t), key);
          const want = rows.get(key);
          if (!want) {
            assert.equal(got, null, `${what}: get ${JSON.stringify(key)}: the model has no such row, the store has ${JSON.stringify(got?.metadata)}`);
            continue;
          }
          assert.ok(got, `${what}: get ${JSON.stringify(key)}: the store has no such row`);
          assert.equal(got.key, key);
          sameVector(got.vector, want.vector, `${what}: get ${JSON.stringify(key)} vector`);
          assert.deepStrictEqual(got.metadata, want.metadata, `${what}: get ${JSON.stringify(key)} metadata`);
          assert.equal(got.text, want.text, `${what}: get ${JSON.stringify(key)} text`);
        }
        for (const s of op.searches) await checkSearch(storage, model, op.t, s, what);
        if (op.scanPage !== null) {
          const seen = new Map<string, number>();
          let cursor: string | null = null;
          let pages = 0;
          do {
            const page: Awaited<ReturnType<Storage['scanVectors']>> = await storage.scanVectors(RANDOM_KEYSPACE, name(op.t), { cursor, limit: op.scanPage });
            assert.ok(page.rows.length <= op.scanPage, `${what}: scan page of ${page.rows.length} > ${op.scanPage}`);
            for (const r of page.rows) {
              seen.set(r.key, (seen.get(r.key) ?? 0) + 1);
              const want = rows.get(r.key);
              assert.ok(want, `${what}: scan gives ${JSON.stringify(r.key)}, which the model does not hold`);
              sameVector(r.vector, want.vector, `${what}: scan ${JSON.stringify(r.key)} vector`);
              assert.deepStrictEqual(r.metadata, want.metadata, `${what}: scan ${JSON.stringify(r.key)} metadata`);
              assert.equal(r.text, want.text, `${what}: scan ${JSON.stringify(r.key)} text`);
            }
            cursor = page.cursor;
            pages++;
          } while (cursor !== null && pages <= rows.size + 2);
          assert.equal(cursor, null, `${what}: scan did not end`);
          assert.deepEqual([...seen].filter(([, n]) => n > 1), [], `${what}: scan gives keys twice`);
          assert.deepEqual([...rows.keys()].filter((k) => !seen.has(k)), [], `${what}: scan misses stored keys`);
        }
        if (op.records !== null) {
          const got = await storage.getMetadata(RANDOM_KEYSPACE, op.records.table, op.records.files);
          const want = new Map<string, MetadataRecord>();
          for (const f of op.records.files) {
            const rec = model.records.get(`${op.records.table}\u0000${f}`);
            if (rec) want.set(f, rec);
          }
          assert.deepStrictEqual(new Map([...got].sort()), new Map([...want].sort()), `${what}: metadata records of ${op.records.table}`);
        }
        break;
      }
    }
    model.apply(op);
  }
}

/** The case itself; the operation count is smaller on Cassandra (every call is a network round trip). */
export async function randomDifferentialCase(storage: Storage, diagnostic: (msg: string) => void): Promise<void> {
  const seed = Number(process.env.VSS_RANDOM_CONTRACT_SEED ?? RANDOM_CONTRACT_SEED);
  const n = Number(process.env.VSS_RANDOM_CONTRACT_OPS ?? (storage.kind === 'cassandra' ? 400 : 800));
  const ops = generateOps(seed, { ops: n, fullCheckEvery: storage.kind === 'cassandra' ? 100 : 50, lightCheckChance: 0.2 });
  const recent: string[] = [];
  const t0 = performance.now();
  try {
    await runOps(storage, ops, (i, op) => {
      recent.push(`#${i} ${describeOp(op)}`);
      if (recent.length > 12) recent.shift();
    });
  } catch (err) {
    const e = err as Error;
    throw new Error(
      `random differential case failed (seed ${seed}, ${n} operations; replay: VSS_RANDOM_CONTRACT_SEED=${seed} VSS_RANDOM_CONTRACT_OPS=${n}):\n${e.message}\nlast operations:\n  ${recent.join('\n  ')}`,
      { cause: err },
    );
  }
  const counts = new Map<string, number>();
  for (const op of ops) counts.set(op.op, (counts.get(op.op) ?? 0) + 1);
  diagnostic(`seed ${seed}: ${ops.length} operations (${[...counts].map(([k, v]) => `${k} ${v}`).join(', ')}) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}
