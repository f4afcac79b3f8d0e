/**
 * Lexical (BM25), semantic and hybrid retrieval on the Cassandra backend against the embedded
 * backend on the same BEIR data set, both in one run: nDCG@10 and recall@100 of each mode on each
 * backend and their difference, how often the two give the same lexical top 10, and what
 * Cassandra's lexical index costs per write and per query. Needs a running Cassandra 5; data sets
 * are read where they lie (BEIR layout: corpus.jsonl, queries.jsonl, qrels-test.tsv), never copied:
 *
 *   node --import tsx bench/lexical-cassandra.bench.ts --data ../shared/datasets/scifact \
 *     [--hybrid] [--pad ../shared/datasets/nfcorpus --pad-rows 20500] [--docs 0 (all)] \
 *     [--tokenizer porter] [--contact-points 127.0.0.1]
 *
 * Each query asks what a search with initial_top_k 100 and final_top_k 100 asks
 * (service/retrieve.ts): the lexical list of 100, with --hybrid the semantic list of 100
 * (candidates 100) and their fusion by the service's default (service/fusion.ts), so recall@100 is
 * read from the same lists as nDCG@10. Without --hybrid the rows get placeholder vectors and only
 * BM25 is compared; with it, every text is embedded with the real model (models/).
 *
 * With --pad-rows N the same tables are then padded to N rows, first with the documents of the
 * --pad corpora, then with generated passages (bench/text-gen.ts), and the queries run again: the
 * judgments still hold (distractors are unjudged, as most of a corpus is), and past 20,000 rows
 * both backends take the pruned lexical path (storage/lexical/prune.ts).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { DEFAULT_MODEL, PROJECT_ROOT } from '../src/config/config.ts';
import { loadModel } from '../src/embedding/model.ts';
import { DEFAULT_FUSION, fuse } from '../src/service/fusion.ts';
import type { LexicalTokenizer, Storage, StoredMatch, VectorRow } from '../src/storage/api.ts';
import { openCassandraStorage } from '../src/storage/cassandra/cassandra-storage.ts';
import { dropPrefixed, freshNames } from '../src/storage/cassandra/test-support.ts';
import { openEmbeddedStorage } from '../src/storage/embedded/embedded-storage.ts';
import { machineKind } from './machine-check.ts';
import { passage } from './text-gen.ts';

const { values: args } = parseArgs({
  options: {
    data: { type: 'string', default: path.join(PROJECT_ROOT, '..', 'shared', 'datasets', 'scifact') },
    docs: { type: 'string', default: '0' },
    tokenizer: { type: 'string', default: 'porter' },
    hybrid: { type: 'boolean', default: false },
    /** Corpora (comma-separated BEIR directories) whose documents pad the tables as distractors. */
    pad: { type: 'string', default: '' },
    /** Rows to pad the tables to after the first round (0: no padded round). */
    'pad-rows': { type: 'string', default: '0' },
    'contact-points': { type: 'string', default: '127.0.0.1' },
  },
});
const TOKENIZER = args.tokenizer as LexicalTokenizer;
const KS = 'beir';
const TABLE = 'docs';
const BATCH = 100;
const K = 10;
/** initial_top_k and final_top_k of the searches measured: each list's depth, and recall's cut-off. */
const DEPTH = 100;

interface Doc {
  id: string;
  text: string;
}

async function readJsonl<T>(file: string): Promise<T[]> {
  return (await readFile(file, 'utf8'))
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);
}

async function readCorpus(dir: string, limit = 0): Promise<Doc[]> {
  const corpus = await readJsonl<{ _id: string; title?: string; text: string }>(path.join(dir, 'corpus.jsonl'));
  return (limit > 0 ? corpus.slice(0, limit) : corpus).map((d) => ({ id: d._id, text: d.title ? `${d.title}\n${d.text}` : d.text }));
}

async function readData(dir: string, limit: number): Promise<{ docs: Doc[]; queries: Doc[]; qrels: Map<string, Map<string, number>> }> {
  const docs = await readCorpus(dir, limit);
  const have = new Set(docs.map((d) => d.id));
  const qrels = new Map<string, Map<string, number>>();
  for (const line of (await readFile(path.join(dir, 'qrels-test.tsv'), 'utf8')).split('\n').slice(1)) {
    const [q, d, s] = line.split('\t');
    if (!q || !have.has(d) || !(Number(s) > 0)) continue;
    if (!qrels.has(q)) qrels.set(q, new Map());
    qrels.get(q)!.set(d, Number(s));
  }
  const queries = (await readJsonl<{ _id: string; text: string }>(path.join(dir, 'queries.jsonl'))).filter((q) => qrels.has(q._id)).map((q) => ({ id: q._id, text: q.text }));
  return { docs, queries, qrels };
}

/** Distractors up to `count`: the pad corpora's documents (keys prefixed by the corpus), then generated passages. */
async function distractors(dirs: string[], count: number): Promise<Doc[]> {
  const out: Doc[] = [];
  for (const dir of dirs) {
    if (out.length >= count) break;
    const name = path.basename(path.resolve(dir));
    for (const d of await readCorpus(dir)) if (out.length < count) out.push({ id: `${name}:${d.id}`, text: d.text });
  }
  for (let i = 0; out.length < count; i++) out.push({ id: `generated:${i}`, text: passage(20, 60) });
  return out;
}

/** nDCG@k with graded (linear) gains, as BEIR's pytrec_eval computes it. */
function ndcg(ranked: string[], rels: Map<string, number>, k = K): number {
  const dcg = ranked.slice(0, k).reduce((s, id, i) => s + (rels.get(id) ?? 0) / Math.log2(i + 2), 0);
  const ideal = [...rels.values()].sort((a, b) => b - a).slice(0, k).reduce((s, r, i) => s + r / Math.log2(i + 2), 0);
  return ideal > 0 ? dcg / ideal : 0;
}

/** The share of the judged documents found in the first `k`. */
function recall(ranked: string[], rels: Map<string, number>, k = DEPTH): number {
  const top = new Set(ranked.slice(0, k));
  return [...rels.keys()].filter((id) => top.has(id)).length / Math.max(1, rels.size);
}

/** A fixed unit vector per row when only BM25 is compared. */
function placeholder(i: number): Float32Array {
  const v = new Float32Array(8);
  v[i % 8] = 1;
  v[(i + 3) % 8] = 0.5;
  return v;
}

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);
const f = (x: number, d = 2): string => x.toFixed(d);

/**
 * Repeats a write the storage gave up on as unavailable (a node overloaded by other work on a
 * shared machine times out now and then): writes are idempotent, so repeating one is safe.
 */
async function retried<T>(f: () => Promise<T>, attempts = 6): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await f();
    } catch (err) {
      if (i >= attempts || (err as { code?: string }).code !== 'storage_unavailable') throw err;
      console.log(`# a write timed out (${(err as Error).message}); again in ${i * 5} s`);
      await new Promise((resolve) => setTimeout(resolve, i * 5_000));
    }
  }
}

type Backend = 'embedded' | 'cassandra';
type Mode = 'lexical' | 'semantic' | 'hybrid';

/** Every query on both backends: per mode the mean nDCG@10 and recall@100, and lexical agreement and latency. */
async function evaluate(
  label: string,
  backends: Record<Backend, Storage>,
  queries: Doc[],
  queryVectors: Float32Array[] | null,
  qrels: Map<string, Map<string, number>>,
): Promise<void> {
  const modes: Mode[] = queryVectors ? ['lexical', 'semantic', 'hybrid'] : ['lexical'];
  const score = new Map<string, { ndcg: number[]; recall: number[] }>();
  const add = (mode: Mode, b: Backend, ranked: string[], rels: Map<string, number>): void => {
    const id = `${mode}/${b}`;
    if (!score.has(id)) score.set(id, { ndcg: [], recall: [] });
    score.get(id)!.ndcg.push(ndcg(ranked, rels));
    score.get(id)!.recall.push(recall(ranked, rels));
  };
  const ms: Record<Backend, number[]> = { embedded: [], cassandra: [] };
  let sameTop = 0;
  let maxDiff = 0;
  for (const [qi, q] of queries.entries()) {
    const rels = qrels.get(q.id)!;
    const lex = {} as Record<Backend, StoredMatch[]>;
    for (const b of ['embedded', 'cassandra'] as const) {
      const s = backends[b];
      const t0 = performance.now();
      lex[b] = await s.lexicalSearch(KS, TABLE, { text: q.text, limit: DEPTH });
      ms[b].push(performance.now() - t0);
      add('lexical', b, lex[b].map((m) => m.key), rels);
      if (queryVectors) {
        // What service/retrieve.ts does for a hybrid search with initial_top_k = final_top_k = DEPTH.
        const sem = await s.search(KS, TABLE, { vector: queryVectors[qi], metric: 'cosine', candidates: DEPTH, limit: DEPTH });
        add('semantic', b, sem.map((m) => m.key), rels);
        const asRefs = (ms: StoredMatch[]) => ms.map((m) => ({ ref: m.key, key: m.key, score: m.score }));
        add('hybrid', b, fuse(asRefs(sem), asRefs(lex[b]), DEFAULT_FUSION).slice(0, DEPTH).map((m) => m.key!), rels);
      }
    }
    const a = lex.embedded.slice(0, K);
    const c = lex.cassandra.slice(0, K);
    if (a.map((m) => m.key).join('\n') === c.map((m) => m.key).join('\n')) sameTop++;
    for (let i = 0; i < Math.min(a.length, c.length); i++) if (a[i].key === c[i].key) maxDiff = Math.max(maxDiff, Math.abs(a[i].score - c[i].score) / Math.max(1, a[i].score));
  }
  console.log(`\n## ${label}\n`);
  console.log('| mode | embedded nDCG@10 | Cassandra nDCG@10 | difference | embedded recall@100 | Cassandra recall@100 | difference |');
  console.log('|---|---|---|---|---|---|---|');
  for (const mode of modes) {
    const e = score.get(`${mode}/embedded`)!;
    const c = score.get(`${mode}/cassandra`)!;
    const [en, cn, er, cr] = [mean(e.ndcg), mean(c.ndcg), mean(e.recall), mean(c.recall)];
    console.log(`| ${mode} | ${f(en, 4)} | ${f(cn, 4)} | ${f(cn - en, 4)} | ${f(er, 4)} | ${f(cr, 4)} | ${f(cr - er, 4)} |`);
  }
  console.log(`\nsame lexical top ${K} (keys and order): ${sameTop} of ${queries.length} queries; largest relative score difference on a shared rank: ${maxDiff.toExponential(1)}`);
  console.log(
    `lexical query (limit ${DEPTH}): Cassandra p50 ${f(pct(ms.cassandra, 50), 1)} ms, p95 ${f(pct(ms.cassandra, 95), 1)} ms; embedded p50 ${f(pct(ms.embedded, 50), 2)} ms, p95 ${f(pct(ms.embedded, 95), 2)} ms (Cassandra p50 ${f(pct(ms.cassandra, 50) / pct(ms.embedded, 50), 1)}x)`,
  );
}

async function main(): Promise<void> {
  const { docs, queries, qrels } = await readData(path.resolve(args.data!), Number(args.docs));
  const padRows = Number(args['pad-rows']);
  const pads = padRows > docs.length ? await distractors(args.pad ? args.pad.split(',') : [], padRows - docs.length) : [];
  const set = path.basename(path.resolve(args.data!));
  console.log(`# lexical/semantic/hybrid: Cassandra vs embedded, ${set}: ${docs.length} docs, ${queries.length} queries with judgements, tokenizer ${TOKENIZER}${args.hybrid ? ', hybrid with the real model' : ''}${pads.length > 0 ? `; then padded with ${pads.length} distractors to ${docs.length + pads.length} rows` : ''}`);
  console.log(`# machine: ${machineKind()}`);

  let docVectors: Float32Array[] = docs.map((_, i) => placeholder(i));
  let padVectors: Float32Array[] = pads.map((_, i) => placeholder(i));
  let queryVectors: Float32Array[] | null = null;
  if (args.hybrid) {
    const model = await loadModel(path.join(PROJECT_ROOT, 'models'), DEFAULT_MODEL, { threads: 2 });
    const t0 = performance.now();
    const embed = async (texts: string[]): Promise<Float32Array[]> => {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += 32) out.push(...(await model.embed(texts.slice(i, i + 32))).vectors);
      return out;
    };
    docVectors = await embed(docs.map((d) => d.text));
    queryVectors = await embed(queries.map((q) => q.text));
    padVectors = await embed(pads.map((d) => d.text));
    console.log(`# embedded ${docs.length + queries.length + pads.length} texts in ${f((performance.now() - t0) / 1000, 0)} s`);
    await model.dispose();
  }
  const dimension = docVectors[0].length;
  const rows: VectorRow[] = docs.map((d, i) => ({ key: d.id, vector: docVectors[i], metadata: { n: i }, text: d.text }));
  const padding: VectorRow[] = pads.map((d, i) => ({ key: d.id, vector: padVectors[i], metadata: { n: docs.length + i }, text: d.text }));

  const dir = await mkdtemp(path.join(os.tmpdir(), 'vss-lexbench-'));
  const names = freshNames();
  const contactPoints = args['contact-points']!.split(',');
  // Both backends as the service configures them by default (exact below 10,000 rows).
  const embedded = await openEmbeddedStorage({ dataDir: dir, index: { saveEveryChanges: 1e9, saveEveryMs: 1e9, exactBelowRows: 10_000 } });
  let cassandra: Storage | null = null;
  try {
    cassandra = await retried(() => openCassandraStorage({ contactPoints, localDc: 'datacenter1', replication: "{'class': 'SimpleStrategy', 'replication_factor': 1}", ...names }));
    const create = async (s: Storage, table: string): Promise<void> => {
      if ((await s.getKeyspace(KS)) === null) await retried(() => s.createKeyspace({ name: KS, owner: null }));
      await retried(() => s.createTable({ keyspace: KS, name: table, dimension, metric: 'cosine', model: null, lexical: { tokenizer: TOKENIZER } }));
    };
    const load = async (s: Storage, table: string, data: VectorRow[]): Promise<number[]> => {
      const ms: number[] = [];
      for (let i = 0; i < data.length; i += BATCH) {
        const t0 = performance.now();
        await retried(() => s.upsertVectors(KS, table, data.slice(i, i + BATCH)));
        ms.push(performance.now() - t0);
      }
      return ms;
    };
    await create(embedded, TABLE);
    await load(embedded, TABLE, rows);
    // The anchor: the same rows without text (no postings), written just before.
    await create(cassandra, 'anchor');
    const anchorMs = await load(cassandra, 'anchor', rows.map((r) => ({ ...r, text: null })));
    await create(cassandra, TABLE);
    const writeMs = await load(cassandra, TABLE, rows);
    // The same rows again (text unchanged: postings rewritten, none deleted) and with new text (old postings deleted too).
    const same = performance.now();
    await cassandra.upsertVectors(KS, TABLE, rows.slice(0, BATCH));
    const sameMs = performance.now() - same;
    const changed = rows.slice(0, BATCH).map((r) => ({ ...r, text: `${r.text} revised` }));
    const chg = performance.now();
    await cassandra.upsertVectors(KS, TABLE, changed);
    await cassandra.upsertVectors(KS, TABLE, rows.slice(0, BATCH));
    const changedMs = (performance.now() - chg) / 2;
    const words = mean(rows.map((r) => (r.text ?? '').split(/\s+/).length));
    console.log(
      `\nwrites (Cassandra, ${BATCH} rows a call, ~${f(words, 0)} words a row): ${f(mean(writeMs) / BATCH)} ms/row new (${f(mean(writeMs) / mean(anchorMs))}x the same rows without text: ${f(mean(anchorMs) / BATCH)} ms/row), ${f(sameMs / BATCH)} ms/row text unchanged, ${f(changedMs / BATCH)} ms/row text changed`,
    );
    const backends = { embedded, cassandra };
    await evaluate(`${set}, ${rows.length} rows`, backends, queries, queryVectors, qrels);
    if (padding.length > 0) {
      for (const s of [embedded, cassandra]) await load(s, TABLE, padding);
      await evaluate(`${set} padded with ${padding.length} distractors (${args.pad || 'generated'}), ${rows.length + padding.length} rows`, backends, queries, queryVectors, qrels);
    }
  } finally {
    await embedded.close();
    await cassandra?.close();
    await rm(dir, { recursive: true, force: true });
    await dropPrefixed(contactPoints, 'datacenter1', names.keyspacePrefix);
  }
}

await main();
