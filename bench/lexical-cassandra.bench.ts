/**
 * Lexical (BM25) and hybrid retrieval on the Cassandra backend against the embedded backend on the
 * same BEIR data set: nDCG@10 of each, how often the two give the same top 10, and what Cassandra's
 * lexical index costs per write and per query. Needs a running Cassandra 5; the data set is read
 * where it lies (BEIR layout: corpus.jsonl, queries.jsonl, qrels-test.tsv), never copied:
 *
 *   bash scripts/cassandra/cassandra.sh run -- node --import tsx bench/lexical-cassandra.bench.ts \
 *     --data ../shared/datasets/nfcorpus [--docs 0 (all)] [--tokenizer porter] [--limit 10] [--hybrid] [--contact-points 127.0.0.1]
 *
 * Without --hybrid the rows get placeholder vectors (only BM25 is compared); with it, documents and
 * queries are embedded with the real model (models/) and hybrid is the service's fusion
 * (service/fusion.ts, its default) of the top 50 by vector and the top 50 by BM25.
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

const { values: args } = parseArgs({
  options: {
    data: { type: 'string', default: path.join(PROJECT_ROOT, '..', 'shared', 'datasets', 'nfcorpus') },
    docs: { type: 'string', default: '0' },
    tokenizer: { type: 'string', default: 'porter' },
    hybrid: { type: 'boolean', default: false },
    /** Rows a lexical query asks for (the service asks up to 1,000 by default; hybrid here always 50). */
    limit: { type: 'string', default: '10' },
    'contact-points': { type: 'string', default: '127.0.0.1' },
  },
});
const TOKENIZER = args.tokenizer as LexicalTokenizer;
const KS = 'beir';
const TABLE = 'docs';
const BATCH = 100;
const K = 10;
const FUSE_EACH = 50;
const LIMIT = args.hybrid ? FUSE_EACH : Math.max(K, Number(args.limit));

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

async function readData(dir: string, limit: number): Promise<{ docs: Doc[]; queries: Doc[]; qrels: Map<string, Map<string, number>> }> {
  const corpus = await readJsonl<{ _id: string; title?: string; text: string }>(path.join(dir, 'corpus.jsonl'));
  const docs = (limit > 0 ? corpus.slice(0, limit) : corpus).map((d) => ({ id: d._id, text: d.title ? `${d.title}\n${d.text}` : d.text }));
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

/** nDCG@k with graded (linear) gains, as BEIR's pytrec_eval computes it. */
function ndcg(ranked: string[], rels: Map<string, number>, k = K): number {
  const dcg = ranked.slice(0, k).reduce((s, id, i) => s + (rels.get(id) ?? 0) / Math.log2(i + 2), 0);
  const ideal = [...rels.values()].sort((a, b) => b - a).slice(0, k).reduce((s, r, i) => s + r / Math.log2(i + 2), 0);
  return ideal > 0 ? dcg / ideal : 0;
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

async function main(): Promise<void> {
  const { docs, queries, qrels } = await readData(path.resolve(args.data!), Number(args.docs));
  console.log(`# lexical/hybrid: Cassandra vs embedded, ${path.basename(path.resolve(args.data!))}: ${docs.length} docs, ${queries.length} queries with judgements, tokenizer ${TOKENIZER}${args.hybrid ? ', hybrid with the real model' : ''}`);
  console.log(`# machine: ${machineKind()}`);

  let docVectors: Float32Array[] = docs.map((_, i) => placeholder(i));
  let queryVectors: Float32Array[] = queries.map((_, i) => placeholder(i));
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
    console.log(`# embedded ${docs.length + queries.length} texts in ${f((performance.now() - t0) / 1000, 0)} s`);
    await model.dispose();
  }
  const dimension = docVectors[0].length;
  const rows: VectorRow[] = docs.map((d, i) => ({ key: d.id, vector: docVectors[i], metadata: { n: i }, text: d.text }));

  const dir = await mkdtemp(path.join(os.tmpdir(), 'vss-lexbench-'));
  const names = freshNames();
  const contactPoints = args['contact-points']!.split(',');
  const embedded = await openEmbeddedStorage({ dataDir: dir, index: { saveEveryChanges: 1e9, saveEveryMs: 1e9, exactBelowRows: 100_000 } });
  const cassandra = await openCassandraStorage({ contactPoints, localDc: 'datacenter1', replication: "{'class': 'SimpleStrategy', 'replication_factor': 1}", ...names });
  try {
    const load = async (s: Storage, table: string, data: VectorRow[]): Promise<number[]> => {
      if ((await s.getKeyspace(KS)) === null) await s.createKeyspace({ name: KS, owner: null });
      await s.createTable({ keyspace: KS, name: table, dimension, metric: 'cosine', model: null, lexical: { tokenizer: TOKENIZER } });
      const ms: number[] = [];
      for (let i = 0; i < data.length; i += BATCH) {
        const t0 = performance.now();
        await s.upsertVectors(KS, table, data.slice(i, i + BATCH));
        ms.push(performance.now() - t0);
      }
      return ms;
    };
    await load(embedded, TABLE, rows);
    // The anchor: the same rows without text (no postings), written just before.
    const anchorMs = await load(cassandra, 'anchor', rows.map((r) => ({ ...r, text: null })));
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

    const results = { lexical: { embedded: [] as number[], cassandra: [] as number[] }, hybrid: { embedded: [] as number[], cassandra: [] as number[] } };
    const ms = { embedded: [] as number[], cassandra: [] as number[] };
    let sameTop = 0;
    let maxDiff = 0;
    for (const [qi, q] of queries.entries()) {
      const rels = qrels.get(q.id)!;
      const lex: Record<'embedded' | 'cassandra', StoredMatch[]> = { embedded: [], cassandra: [] };
      for (const [name, s] of [['embedded', embedded], ['cassandra', cassandra]] as const) {
        const t0 = performance.now();
        lex[name] = await s.lexicalSearch(KS, TABLE, { text: q.text, limit: LIMIT });
        ms[name].push(performance.now() - t0);
        results.lexical[name].push(ndcg(lex[name].map((m) => m.key), rels));
        if (args.hybrid) {
          const sem = await s.search(KS, TABLE, { vector: queryVectors[qi], metric: 'cosine', candidates: 100, limit: FUSE_EACH });
          results.hybrid[name].push(ndcg(fuse(sem, lex[name], DEFAULT_FUSION).map((m) => m.key), rels));
        }
      }
      const a = lex.embedded.slice(0, K);
      const b = lex.cassandra.slice(0, K);
      if (a.map((m) => m.key).join('\n') === b.map((m) => m.key).join('\n')) sameTop++;
      for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i].key === b[i].key) maxDiff = Math.max(maxDiff, Math.abs(a[i].score - b[i].score) / Math.max(1, a[i].score));
    }
    console.log(`\n| mode | embedded nDCG@10 | Cassandra nDCG@10 | difference |`);
    console.log(`|---|---|---|---|`);
    for (const mode of args.hybrid ? (['lexical', 'hybrid'] as const) : (['lexical'] as const)) {
      const e = mean(results[mode].embedded);
      const c = mean(results[mode].cassandra);
      console.log(`| ${mode} | ${f(e, 4)} | ${f(c, 4)} | ${f(c - e, 4)} |`);
    }
    console.log(`\nsame lexical top ${K} (keys and order): ${sameTop} of ${queries.length} queries; largest relative score difference on a shared rank: ${maxDiff.toExponential(1)}`);
    console.log(`lexical query (limit ${LIMIT}): Cassandra p50 ${f(pct(ms.cassandra, 50), 1)} ms, p95 ${f(pct(ms.cassandra, 95), 1)} ms; embedded p50 ${f(pct(ms.embedded, 50), 2)} ms, p95 ${f(pct(ms.embedded, 95), 2)} ms`);
  } finally {
    await embedded.close();
    await cassandra.close();
    await rm(dir, { recursive: true, force: true });
    await dropPrefixed(contactPoints, 'datacenter1', names.keyspacePrefix);
  }
}

await main();
