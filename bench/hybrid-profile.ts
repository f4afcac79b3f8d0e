/**
 * Where one hybrid search's time goes, in process (no HTTP): each storage call of the pipeline
 * timed alone, beside the whole of retrieve() for semantic, lexical and hybrid (and hybrid with its
 * lexical list given at once: what the rest of the pipeline costs), over hybrid.bench's rows; then
 * a timeline of each mode's retrieve(): when each list is asked for and answered, when the
 * postings thread begins and ends its top k, and what the main thread does after (medians over the
 * queries, ms from the start of the search), and each thread's time running and waiting to run
 * (Linux's schedstat: a thread that is ready but finds both cores busy waits in the run queue).
 *
 *   node --import tsx bench/hybrid-profile.ts [--n 100000] [--queries 200] [--dir DIR] [--keyspace KS] [--only WORDS] [--exact]
 *
 * --dir keeps the data directory (loaded on the first run, reused after); hybrid.bench's
 * `--data-dir` (searched only, under the bench lock) with `--keyspace default_keyspace`; --only
 * times only the steps whose name holds WORDS; --exact first compares the lists with an exhaustive
 * scan (see exactness()). Add `--cpu-prof` to node's flags for a V8 profile.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/config.ts';
import { retrieve, type Retrieval } from '../src/service/retrieve.ts';
import { DEFAULT_FUSION, fuse } from '../src/service/fusion.ts';
import { openStorage } from '../src/storage/factory.ts';
import type { RowRef, ScoredRef, Storage } from '../src/storage/api.ts';
import { postingSearches, type PostingsTimeline } from '../src/storage/embedded/lexical-postings.ts';
import { loadInProcess, queriesOver } from './hybrid-data.ts';
import { makeCentres, pct } from './workload.ts';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    queries: { type: 'string', default: '200' },
    dir: { type: 'string' },
    keyspace: { type: 'string', default: 'ks' },
    only: { type: 'string' },
    exact: { type: 'boolean', default: false },
  },
});
const N = Number(args.n);
const Q = Number(args.queries);
const DIM = 384;
const KS = args.keyspace!;
const TABLE = 'hybrid';
const dir = args.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'vss-hybrid-profile-')));
const centres = makeCentres(64, DIM);

const fresh = await stat(path.join(dir, 'vss.db')).then(() => false, () => true);
if (fresh) {
  const s = await openStorage(loadConfig({ VSS_DATA_DIR: dir }));
  await s.createKeyspace({ name: KS, owner: null });
  await s.createTable({ keyspace: KS, name: TABLE, dimension: DIM, metric: 'cosine', model: null });
  await s.close();
  const rate = await loadInProcess(dir, KS, TABLE, N, DIM, centres, false);
  console.log(`loaded ${N} rows in process: ${rate.toFixed(0)} rows/s`);
}
const storage: Storage = await openStorage(loadConfig({ VSS_DATA_DIR: dir }), { log: (m, e) => console.error(m, e ?? '') });
const report = setInterval(() => console.error(JSON.stringify(storage.indexStatus?.())), 10_000);
await (storage as Storage & { whenIndexed(): Promise<void> }).whenIndexed();
clearInterval(report);
console.error('indexed');
const { vectors: qv, texts: qt } = queriesOver(N, Q, DIM, centres);
// The posting lists are built on the first lexical searches, a slice per event-loop turn.
for (let i = 0; postingSearches.answered === 0; i++) {
  await storage.lexicalSearch(KS, TABLE, { text: qt[i % Q], limit: 100 });
  await new Promise((r) => setTimeout(r, 1));
}

const base = (i: number): Retrieval => ({
  keyspace: KS, table: TABLE, mode: 'semantic', vector: qv[i], text: qt[i], metric: 'cosine', candidates: 100, limit: 10, includeVector: false, fusion: DEFAULT_FUSION,
});
if (args.exact) await exactness();
// Hybrid with its lexical list answered at once, from a copy made here: what the rest of a hybrid search costs.
const lexicalLists = new Map<string, ScoredRef[]>();
for (let i = 0; i < Q; i++) lexicalLists.set(qt[i], await storage.lexicalSearchRefs(KS, TABLE, { text: qt[i], limit: 100 }));
const lexicalGiven: Storage = Object.create(storage);
lexicalGiven.lexicalSearchRefs = async (_ks, _t, q) => lexicalLists.get(q.text)!.map((r) => ({ ...r }));
const steps: Record<string, (i: number) => Promise<unknown>> = {
  'semantic (retrieve, final 10)': (i) => retrieve(storage, base(i)),
  'hybrid (retrieve, final 10)': (i) => retrieve(storage, { ...base(i), mode: 'hybrid' }),
  'hybrid, its lexical list given at once (retrieve, final 10)': (i) => retrieve(lexicalGiven, { ...base(i), mode: 'hybrid' }),
  'lexical (retrieve, final 10)': (i) => retrieve(storage, { ...base(i), mode: 'lexical', vector: null }),
  'storage.search, limit 100': (i) => storage.search(KS, TABLE, { vector: qv[i], metric: 'cosine', candidates: 100, limit: 100 }),
  'storage.lexicalSearch, limit 100': (i) => storage.lexicalSearch(KS, TABLE, { text: qt[i], limit: 100 }),
  'storage.searchRefs, limit 100': (i) => storage.searchRefs(KS, TABLE, { vector: qv[i], metric: 'cosine', candidates: 100, limit: 100 }),
  'storage.lexicalSearchRefs, limit 100': (i) => storage.lexicalSearchRefs(KS, TABLE, { text: qt[i], limit: 100 }),
  // Row ids as refs: a load into a fresh directory numbers its rows from 1.
  'storage.readMatches, 10 refs': (i) => storage.readMatches(KS, TABLE, Array.from({ length: 10 }, (_, k) => 1 + ((i * 7919 + k * 104729) % N))),
  'storage.search, limit 10': (i) => storage.search(KS, TABLE, { vector: qv[i], metric: 'cosine', candidates: 100, limit: 10 }),
};
for (let turn = 0; turn < 2; turn++) {
  for (const [name, run] of Object.entries(steps)) {
    // --only WORDS: the steps whose name holds them (a CPU profile of one step).
    if (args.only !== undefined && !name.includes(args.only)) continue;
    const lat: number[] = [];
    for (let i = 0; i < Q; i++) {
      const t0 = performance.now();
      await run(i);
      lat.push(performance.now() - t0);
    }
    if (turn === 1) console.log(`${name}: p50 ${pct(lat, 50).toFixed(2)} ms, p99 ${pct(lat, 99).toFixed(2)} ms (lexical searches answered from posting lists so far: ${postingSearches.answered})`);
  }
}

// The timeline: each storage call of a hybrid retrieve() timed through a wrapper, the postings
// thread's own times from its answer (postingSearches.last), all in ms since the epoch.
const clock = (): number => performance.timeOrigin + performance.now();
type Marks = Record<string, number>;
let marks: Marks = {};
const timed = <T>(name: string, p: () => Promise<T>): Promise<T> => {
  marks[`${name} asked`] = clock();
  return p().then((v) => ((marks[`${name} answered`] = clock()), v));
};
const traced: Storage = Object.create(storage);
traced.searchRefs = (ks, t, q) => timed('semantic list (searchRefs)', () => storage.searchRefs(ks, t, q));
traced.lexicalSearchRefs = (ks, t, q) => timed('lexical list (lexicalSearchRefs)', () => storage.lexicalSearchRefs(ks, t, q));
traced.readMatches = (ks, t, refs, o) => timed('rows read (readMatches)', () => storage.readMatches(ks, t, refs, o));
traced.search = (ks, t, q) => timed('semantic search', () => storage.search(ks, t, q));
for (const mode of ['semantic', 'lexical', 'hybrid'] as const) {
  if (args.only !== undefined && !`${mode} timeline`.includes(args.only)) continue;
  const all: Marks[] = [];
  // From the second turn's start, as the timeline.
  let sched = new Map<string, [number, number]>();
  for (let turn = 0; turn < 2; turn++) {
    if (turn === 1) sched = schedstat();
    for (let i = 0; i < Q; i++) {
      marks = {};
      postingSearches.last = null;
      const t0 = clock();
      await retrieve(traced, { ...base(i), mode, vector: mode === 'lexical' ? null : qv[i] });
      const end = clock();
      const p = postingSearches.last as PostingsTimeline | null;
      if (p !== null) Object.assign(marks, { 'postings thread: sent': p.sent, 'postings thread: began': p.began, 'postings thread: ended': p.ended, 'postings thread: answer handled': p.handled });
      marks['retrieve() done'] = end;
      if (turn === 1) all.push(Object.fromEntries(Object.entries(marks).map(([k, v]) => [k, v - t0])));
    }
  }
  printSchedstat(mode, sched, schedstat());
  const names = Object.keys(all[0]).sort((a, b) => pct(all.map((m) => m[a]), 50) - pct(all.map((m) => m[b]), 50));
  console.log(`${mode} retrieve(), final 10, timeline (median ms from its start over ${Q} queries):`);
  for (const k of names) console.log(`  ${pct(all.map((m) => m[k]), 50).toFixed(3)}  ${k}`);
  const spans = (a: string, b: string) => pct(all.map((m) => m[b] - m[a]), 50).toFixed(3);
  if (mode === 'lexical') {
    console.log(`  spans (medians): top k on the thread ${spans('postings thread: began', 'postings thread: ended')}, sent to begun ${spans('postings thread: sent', 'postings thread: began')}, ended to handled ${spans('postings thread: ended', 'postings thread: answer handled')}`);
  }
  if (mode === 'hybrid') {
    for (const m of all) m['both lists answered'] = Math.max(m['semantic list (searchRefs) answered'], m['lexical list (lexicalSearchRefs) answered']);
    console.log(`  spans (medians): top k on the thread ${spans('postings thread: began', 'postings thread: ended')}, sent to begun ${spans('postings thread: sent', 'postings thread: began')}, ended to handled ${spans('postings thread: ended', 'postings thread: answer handled')}, semantic list ${spans('semantic list (searchRefs) asked', 'semantic list (searchRefs) answered')}, lexical list ended after the semantic one by ${spans('semantic list (searchRefs) answered', 'lexical list (lexicalSearchRefs) answered')}, fusion (both lists answered to the rows' read) ${spans('both lists answered', 'rows read (readMatches) asked')}, the rows' read to the end ${spans('rows read (readMatches) asked', 'retrieve() done')}`);
  }
}
await storage.close();

/** Each thread's time running and waiting in the run queue so far (ns, /proc/self/task/TID/schedstat); empty where there is no /proc. */
function schedstat(): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const [run, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      out.set(tid, [run, wait]);
    }
  } catch {
    // not Linux: nothing to print
  }
  return out;
}

/** Per search of the turn between `a` and `b`: the main thread's and the busiest other threads' ms running / waiting to run. */
function printSchedstat(mode: string, a: Map<string, [number, number]>, b: Map<string, [number, number]>): void {
  const per = [...b]
    .map(([tid, [run, wait]]) => ({ tid, run: (run - (a.get(tid)?.[0] ?? 0)) / 1e6 / Q, wait: (wait - (a.get(tid)?.[1] ?? 0)) / 1e6 / Q }))
    .filter((t) => t.run >= 0.01)
    .sort((x, y) => (x.tid === String(process.pid) ? -1 : y.tid === String(process.pid) ? 1 : y.run - x.run));
  if (per.length === 0) return;
  const total = per.reduce((s, t) => s + t.wait, 0);
  const shown = per.slice(0, 3).map((t) => `${t.tid === String(process.pid) ? 'main' : `thread ${t.tid}`} ${t.run.toFixed(3)} / ${t.wait.toFixed(3)}`);
  console.log(`${mode} retrieve(), per search, ms running / waiting to run: ${shown.join(', ')}; all threads waiting ${total.toFixed(3)}`);
}

/**
 * --exact: how far the graphs' lists are from an exhaustive scan (a filter every row passes makes
 * storage score every row exactly): the semantic list of initial_top_k 100 (recall@10, @100), and
 * hybrid's top 10 against the exhaustive semantic list fused with the same lexical list, at the
 * default effort and at wider walks.
 */
async function exactness(): Promise<void> {
  const everyRow = { i: { $gte: 0 } };
  const exhaustive: { semantic: RowRef[]; fused: string[] }[] = [];
  let at10 = 0;
  let at100 = 0;
  let wider100 = 0;
  for (let i = 0; i < Q; i++) {
    const semantic = await storage.searchRefs(KS, TABLE, { vector: qv[i], metric: 'cosine', candidates: 100, limit: 100, filter: everyRow });
    const lexical = await storage.lexicalSearchRefs(KS, TABLE, { text: qt[i], limit: 100 });
    const top = fuse(semantic, lexical, DEFAULT_FUSION).slice(0, 10).map((f) => f.ref);
    const read = await storage.readMatches(KS, TABLE, top);
    exhaustive.push({ semantic: semantic.map((m) => m.ref), fused: top.map((ref) => read.get(ref)?.key ?? '') });
    const listed = (await storage.searchRefs(KS, TABLE, { vector: qv[i], metric: 'cosine', candidates: 100, limit: 100 })).map((m) => m.ref);
    const exact = exhaustive[i].semantic;
    at10 += listed.slice(0, 10).filter((k) => exact.slice(0, 10).includes(k)).length / 10 / Q;
    at100 += listed.filter((k) => exact.includes(k)).length / 100 / Q;
    // The graphs rank by their int8 copies: 200 of their candidates re-scored exactly, the best 100 kept.
    const wider = (await storage.searchRefs(KS, TABLE, { vector: qv[i], metric: 'cosine', candidates: 200, limit: 100 })).map((m) => m.ref);
    wider100 += wider.filter((k) => exact.includes(k)).length / 100 / Q;
  }
  console.log(`semantic list of 100 against an exhaustive scan: recall@10 ${at10.toFixed(3)}, recall@100 ${at100.toFixed(3)}; recall@100 of the best 100 of 200 candidates re-scored ${wider100.toFixed(3)}`);
  for (const ef of [undefined, 256]) {
    let same = 0;
    for (let i = 0; i < Q; i++) {
      const got = await retrieve(storage, { ...base(i), mode: 'hybrid', ef });
      same += got.matches.filter((m) => exhaustive[i].fused.includes(m.key)).length / 10 / Q;
    }
    console.log(`hybrid top 10 at ${ef === undefined ? 'the default effort' : `ef ${ef}`}: ${same.toFixed(3)} of it in the exhaustive lists' fused top 10`);
  }
}
