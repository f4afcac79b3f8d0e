/**
 * Search quality of the three modes through the HTTP API (in process, app.inject, real model):
 * nDCG@10 and recall@100 of semantic, lexical, hybrid with the default fusion, RRF (k 60) and
 * relative fusion at alpha 0.3-0.7, on labelled sets in BEIR's format.
 *
 *   node --import tsx bench/hybrid-eval.bench.ts [--sets docs,scifact,nfcorpus] [--datasets DIR] [--embed-only]
 *
 * Sets: `docs` ships in bench/eval-sets/docs (passages of this repository's docs, queries and
 * judgements written for it); `scifact` and `nfcorpus` are read from --datasets (default
 * ../shared/datasets beside the checkout), never copied here. Passages are embedded once as
 * `(title + " " + text).trim()` and cached in .bench-data/hybrid-eval/ (gitignored), so a re-run
 * only embeds the queries (through the service, as a client's search would).
 * nDCG@10 as pytrec_eval's ndcg_cut.10 (gain = the judged grade), recall@100 over the judged
 * passages with a grade above 0.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MODEL, PROJECT_ROOT } from '../src/config/config.ts';
import { loadModel } from '../src/embedding/model.ts';
import { encodeFloat32Base64 } from '../src/platform/float32-base64.ts';
import { startTestApp, type TestApp } from '../src/http/testing.ts';

const { values: args } = parseArgs({
  options: {
    sets: { type: 'string', default: 'docs,scifact,nfcorpus' },
    datasets: { type: 'string' },
    'embed-only': { type: 'boolean', default: false },
    threads: { type: 'string', default: '1' },
  },
});
const SETS = args.sets!.split(',').map((s) => s.trim()).filter(Boolean);
const DATASETS = args.datasets ?? [path.resolve(PROJECT_ROOT, '../shared/datasets'), path.resolve(PROJECT_ROOT, '../../shared/datasets')].find(existsSync) ?? '';
const CACHE = path.join(PROJECT_ROOT, '.bench-data', 'hybrid-eval');

interface Doc {
  id: string;
  text: string;
}
interface LabelledSet {
  name: string;
  docs: Doc[];
  queries: { id: string; text: string }[];
  /** query id -> doc id -> grade */
  qrels: Map<string, Map<string, number>>;
}

const readJsonl = async (file: string): Promise<Record<string, unknown>[]> =>
  (await readFile(file, 'utf8'))
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

async function loadSet(name: string): Promise<LabelledSet> {
  const dir = name === 'docs' ? path.join(PROJECT_ROOT, 'bench/eval-sets/docs') : path.join(DATASETS, name);
  const qrelsFile = ['qrels.tsv', 'qrels-test.tsv'].map((f) => path.join(dir, f)).find(existsSync);
  if (!qrelsFile) throw new Error(`no qrels in ${dir} (give --datasets)`);
  const qrels = new Map<string, Map<string, number>>();
  for (const line of (await readFile(qrelsFile, 'utf8')).split('\n').slice(1)) {
    const [q, d, g] = line.split('\t');
    if (!q || !d) continue;
    if (!qrels.has(q)) qrels.set(q, new Map());
    qrels.get(q)!.set(d, Number(g));
  }
  const docs = (await readJsonl(path.join(dir, 'corpus.jsonl'))).map((r) => ({ id: String(r._id), text: `${(r.title as string) ?? ''} ${r.text as string}`.trim() }));
  const queries = (await readJsonl(path.join(dir, 'queries.jsonl')))
    .filter((r) => qrels.has(String(r._id)))
    .map((r) => ({ id: String(r._id), text: r.text as string }));
  return { name, docs, queries, qrels };
}

/** The passages' vectors, from the cache when it holds these exact texts. */
async function passageVectors(set: LabelledSet): Promise<Float32Array[]> {
  const hash = createHash('sha256');
  for (const d of set.docs) hash.update(d.text).update('\u0000');
  const file = path.join(CACHE, `${set.name}-${DEFAULT_MODEL}-${hash.digest('hex').slice(0, 16)}.f32`);
  const model = await loadModel(path.join(PROJECT_ROOT, 'models'), DEFAULT_MODEL, { threads: Number(args.threads) });
  const dim = model.dimension;
  if (existsSync(file)) {
    const buf = await readFile(file);
    await model.dispose();
    return set.docs.map((_, i) => new Float32Array(buf.buffer.slice(buf.byteOffset + i * dim * 4, buf.byteOffset + (i + 1) * dim * 4)));
  }
  // Similar lengths share a model call (padding is paid for).
  const order = set.docs.map((_, i) => i).sort((a, b) => set.docs[a].text.length - set.docs[b].text.length);
  const out: Float32Array[] = new Array(set.docs.length);
  const t0 = Date.now();
  for (let i = 0; i < order.length; i += 32) {
    const batch = order.slice(i, i + 32);
    const { vectors } = await model.embed(batch.map((j) => set.docs[j].text));
    batch.forEach((j, k) => (out[j] = vectors[k]));
    if ((i / 32) % 20 === 0) console.error(`${set.name}: embedded ${i + batch.length}/${order.length} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  }
  await model.dispose();
  await mkdir(CACHE, { recursive: true });
  const all = new Float32Array(out.length * dim);
  out.forEach((v, i) => all.set(v, i * dim));
  await writeFile(file, Buffer.from(all.buffer));
  return out;
}

async function ingest(t: TestApp, set: LabelledSet, vectors: Float32Array[]): Promise<void> {
  const created = await t.call('POST', '/v1/keyspaces/table/create', { keyspace: 'default_keyspace', table: set.name, dimension: vectors[0].length });
  if (created.statusCode !== 200) throw new Error(`table/create: ${created.body}`);
  for (let i = 0; i < set.docs.length; i += 500) {
    const vs = set.docs.slice(i, i + 500).map((d, k) => ({ key: d.id, vector_base64: encodeFloat32Base64(vectors[i + k]), text: d.text }));
    const r = await t.call('POST', '/v1/vector/batch', { keyspace: 'default_keyspace', table: set.name, vectors: vs });
    if (r.statusCode !== 200) throw new Error(`vector/batch: ${r.body.slice(0, 500)}`);
  }
}

/** pytrec_eval's ndcg_cut.10: gain = grade, log2(rank + 1) discount, ideal from every judged grade. */
function ndcgAt10(ranked: string[], judged: Map<string, number>): number {
  let dcg = 0;
  ranked.slice(0, 10).forEach((id, i) => (dcg += (judged.get(id) ?? 0) / Math.log2(i + 2)));
  const ideal = [...judged.values()].filter((g) => g > 0).sort((a, b) => b - a).slice(0, 10);
  const idcg = ideal.reduce((s, g, i) => s + g / Math.log2(i + 2), 0);
  return idcg > 0 ? dcg / idcg : 0;
}

function recallAt100(ranked: string[], judged: Map<string, number>): number {
  const relevant = [...judged].filter(([, g]) => g > 0).map(([id]) => id);
  if (relevant.length === 0) return 0;
  const top = new Set(ranked.slice(0, 100));
  return relevant.filter((id) => top.has(id)).length / relevant.length;
}

const CONFIGS: { name: string; body: Record<string, unknown> }[] = [
  { name: 'semantic', body: { mode: 'semantic' } },
  { name: 'lexical', body: { mode: 'lexical' } },
  { name: 'hybrid (default)', body: { mode: 'hybrid' } },
  { name: 'hybrid rrf k=60', body: { mode: 'hybrid', fusion: { method: 'rrf', k: 60 } } },
  ...[0.3, 0.4, 0.5, 0.6, 0.7].map((alpha) => ({ name: `hybrid relative α=${alpha}`, body: { mode: 'hybrid', fusion: { method: 'relative', alpha } } })),
];

async function evaluate(t: TestApp, set: LabelledSet): Promise<{ name: string; ndcg: number; recall: number }[]> {
  const out = [];
  for (const c of CONFIGS) {
    let ndcg = 0;
    let recall = 0;
    for (const q of set.queries) {
      const r = await t.call('POST', '/v1/search/', { keyspace: 'default_keyspace', table: set.name, query: q.text, final_top_k: 100, ...c.body });
      if (r.statusCode !== 200) throw new Error(`search ${c.name} ${q.id}: ${r.body.slice(0, 500)}`);
      const ranked = (r.json() as { matches: { key: string }[] }).matches.map((m) => m.key);
      ndcg += ndcgAt10(ranked, set.qrels.get(q.id)!);
      recall += recallAt100(ranked, set.qrels.get(q.id)!);
    }
    out.push({ name: c.name, ndcg: ndcg / set.queries.length, recall: recall / set.queries.length });
  }
  return out;
}

const sets = await Promise.all(SETS.map(loadSet));
const vectors = [];
for (const s of sets) vectors.push(await passageVectors(s));
if (args['embed-only']) process.exit(0);

const t = await startTestApp({ model: 'real' });
const results = new Map<string, Map<string, { ndcg: number; recall: number }>>();
try {
  for (let i = 0; i < sets.length; i++) {
    await ingest(t, sets[i], vectors[i]);
    for (const r of await evaluate(t, sets[i])) {
      if (!results.has(r.name)) results.set(r.name, new Map());
      results.get(r.name)!.set(sets[i].name, r);
    }
    console.error(`${sets[i].name}: ${sets[i].docs.length} passages, ${sets[i].queries.length} queries done`);
  }
} finally {
  await t.close();
}
const f3 = (n: number | undefined): string => (n === undefined ? '-' : n.toFixed(3));
console.log(`| mode | ${sets.map((s) => `${s.name} nDCG@10 | ${s.name} R@100`).join(' | ')} | mean nDCG@10 |`);
console.log(`| --- | ${sets.map(() => '---: | ---:').join(' | ')} | ---: |`);
for (const [name, bySet] of results) {
  const mean = sets.reduce((s, x) => s + bySet.get(x.name)!.ndcg, 0) / sets.length;
  console.log(`| ${name} | ${sets.map((s) => `${f3(bySet.get(s.name)?.ndcg)} | ${f3(bySet.get(s.name)?.recall)}`).join(' | ')} | ${f3(mean)} |`);
}
