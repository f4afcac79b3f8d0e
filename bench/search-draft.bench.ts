/**
 * Text search with and without the draft model (VSS_SEARCH_DRAFT), in one process, interleaved
 * query by query, so that this VM's drifts in speed reach both alike:
 *
 *   node --max-old-space-size=8000 --import tsx bench/search-draft.bench.ts --dir <a data directory kept by vectors.bench.ts --keep>
 *   node --import tsx bench/search-draft.bench.ts --n 600000      # loads its own rows first (minutes)
 *
 * Each pair runs one short uncached text query through storage's search without a draft and one
 * with it (order alternating), exactly as the service does (the model's promise and the token
 * ids), `initial_top_k` 100, `final_top_k` 10; and, between pairs, the model call alone. Reports
 * p50/p90 of each and how many searches began from the draft. The table must have at least two
 * sealed graphs (250,000 rows each) for the worker to share: N ≥ 500,000.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/config.ts';
import { ModelRegistry } from '../src/embedding/registry.ts';
import { offerSearchDrafts } from '../src/service/drafts.ts';
import { openEmbeddedStorage } from '../src/storage/embedded/embedded-storage.ts';
import { fmtCheck, MachineChecker, machineKind } from './machine-check.ts';
import { makeCentres, writeVector } from './workload.ts';

const { values: args } = parseArgs({
  options: {
    dir: { type: 'string' },
    n: { type: 'string', default: '600000' },
    pairs: { type: 'string', default: '300' },
  },
});
const PAIRS = Number(args.pairs);
const KS = 'default_keyspace';
const TABLE = 'bench';
const DIM = 384;
const TEXTS = ['what is a vector database', 'cheap flights to lisbon', 'how to bake sourdough bread', 'kitten sleeping on a couch', 'rust borrow checker error'];

const pct = (a: number[], p: number): number => {
  const b = [...a].sort((x, y) => x - y);
  return b[Math.min(b.length - 1, Math.floor((b.length * p) / 100))];
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const own = args.dir === undefined ? await mkdtemp(path.join(os.tmpdir(), 'vss-draft-bench-')) : null;
  const dataDir = args.dir ?? own!;
  const config = loadConfig({ VSS_DATA_DIR: dataDir });
  const storage = await openEmbeddedStorage({ dataDir, index: config.index });
  const models = new ModelRegistry({ ...config, embedding: config.embedding });
  try {
    await models.start();
    let drafts = 'loading';
    offerSearchDrafts(config, models, storage, (level, msg) => (drafts = `${level}: ${msg}`));
    if (own) {
      const n = Number(args.n);
      await storage.createTable({ keyspace: KS, name: TABLE, dimension: DIM, metric: 'cosine', model: null });
      const centres = makeCentres(64, DIM);
      for (let i = 0; i < n; i += 1000) {
        const rows = Array.from({ length: Math.min(1000, n - i) }, (_, j) => {
          const vector = new Float32Array(DIM);
          writeVector(i + j, centres, vector, 0);
          return { key: `k${i + j}`, vector, metadata: {}, text: null };
        });
        await storage.upsertVectors(KS, TABLE, rows);
      }
      console.error(`loaded ${n.toLocaleString('en')} rows`);
    }
    await storage.whenIndexed();
    // The last sealed graph is mapped in a quiet moment, and the worker reads graphs through.
    await sleep(8000);
    console.error(`draft model: ${drafts}`);
    const embedder = models.get();
    const machine = new MachineChecker();
    console.error(`machine check: ${fmtCheck(machine.check())}`);
    const lat = { plain: [] as number[], draft: [] as number[], model: [] as number[] };
    const before = storage.searchCounts().drafted;
    for (let i = 0; i < PAIRS; i++) {
      for (const mode of i % 2 ? (['draft', 'plain'] as const) : (['plain', 'draft'] as const)) {
        const query = `${TEXTS[i % TEXTS.length]} ${mode} ${i}`;
        const t0 = performance.now();
        const vector = embedder.embed([query]).then((v) => v[0]);
        const draft = mode === 'draft' ? embedder.draftFor(query) ?? undefined : undefined;
        await storage.search(KS, TABLE, { vector, ...(draft ? { draft } : {}), metric: 'cosine', candidates: 100, limit: 10 });
        lat[mode].push(performance.now() - t0);
        await sleep(2);
      }
      const t0 = performance.now();
      await embedder.embed([`${TEXTS[i % TEXTS.length]} model ${i}`]);
      lat.model.push(performance.now() - t0);
      await sleep(2);
    }
    console.error(`machine check: ${fmtCheck(machine.check())}`);
    const drafted = storage.searchCounts().drafted - before;
    const rows = await storage.countVectors(KS, TABLE);
    console.log(`\n${rows.toLocaleString('en')} rows × ${DIM}, ${PAIRS} pairs, ${machineKind()}, node ${process.version}\n`);
    console.log('| text search, initial_top_k 100, concurrency 1, in process | p50 | p90 |\n|---|---|---|');
    console.log(`| without the draft | ${pct(lat.plain, 50).toFixed(2)} ms | ${pct(lat.plain, 90).toFixed(2)} ms |`);
    console.log(`| with the draft (${drafted} of ${PAIRS} drafted) | ${pct(lat.draft, 50).toFixed(2)} ms | ${pct(lat.draft, 90).toFixed(2)} ms |`);
    console.log(`| the model call alone | ${pct(lat.model, 50).toFixed(2)} ms | ${pct(lat.model, 90).toFixed(2)} ms |`);
  } finally {
    await models.close();
    await storage.close();
    if (own) await rm(own, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
