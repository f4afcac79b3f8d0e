/**
 * A fresh process answers its first few thousand searches up to twice as slowly as it later does,
 * until V8 has optimised the code they run: HTTP, auth, the service and the store
 * (docs/PERFORMANCE.md, "A fresh process's first searches"). The warm-up runs that code before a
 * client needs it, on nothing of the client's: a throwaway embedded store in a folder of the data
 * directory, served by an app of its own built from the same modules with a key of its own, sent
 * writes and searches through inject() (no socket) while the real server has no request to handle,
 * then closed and removed. The two apps' handlers are closures made at the same places in the code,
 * so they share V8's feedback and optimised code; but the real server's objects (its sockets, its
 * Fastify instance, its tables) have other shapes, and its first requests make ~45 optimised
 * functions bail out (docs/PERFORMANCE.md): the warm-up saves the first searches part of the wait.
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/config.ts';
import { FakeEmbeddingModel } from '../embedding/fake.ts';
import { encodeFloat32Base64 } from '../platform/float32-base64.ts';
import { Metrics } from '../observability/metrics.ts';
import { bootstrap } from '../service/bootstrap.ts';
import type { Deps } from '../service/deps.ts';
import { newSecret } from '../service/keys.ts';
import type { Storage } from '../storage/api.ts';
import { openStorage } from '../storage/factory.ts';
import { buildApp } from './app.ts';

/** What the throwaway store holds and how the searches run. */
const SHAPE = Object.freeze({
  dimension: 384,
  /**
   * Rows written and indexed before the searches begin: enough that 100 candidates come from the
   * graph rather than a scan (storage/embedded/vectors.ts, ANN_MAX_CANDIDATE_SHARE), with the
   * table scanned exactly only under `exactBelowRows`.
   */
  rows: 7_000,
  exactBelowRows: 1_000,
  batch: 250,
  /** Rows written every `tailEvery` searches (a multiple of `turn`): searched as the unindexed tail beside the graph. */
  tailRows: 200,
  tailEvery: 256,
  /** Searches run back to back between two looks at the real server (up to ~15 ms, cold). */
  turn: 8,
});

/** How long the real server must have had no request before a turn runs. */
const QUIET_MS = 100;

const KEYSPACE = 'default_keyspace';
const TABLE = 'warm_up';

export interface WarmUpOptions {
  /** How many searches to send; 0 sends none. */
  searches: number;
  /** Requests the real server has received so far: while it moves, the warm-up rests. */
  activity: () => number;
  log?: (msg: string, err?: unknown) => void;
}

export class SearchWarmUp {
  readonly #deps: Deps;
  readonly #opts: WarmUpOptions;
  readonly #dir: string;
  #stopped = false;
  #run: Promise<void> | null = null;
  #searched = 0;
  #graphSearches = 0;
  #written = 0;
  /** The real server's request count when last looked at, and when it last moved. */
  #seen = 0;
  #movedAt = 0;

  constructor(deps: Deps, opts: WarmUpOptions) {
    this.#deps = deps;
    this.#opts = opts;
    this.#dir = path.join(deps.config.dataDir, 'warm-up');
  }

  /** Searches answered so far, how many of them walked a graph (where the store tells), and rows written. */
  get progress(): { searches: number; graphSearches: number; rows: number } {
    return { searches: this.#searched, graphSearches: this.#graphSearches, rows: this.#written };
  }

  /** Starts the warm-up in the background; resolves when it has finished or stopped (never rejects). */
  start(): Promise<void> {
    // Requests may be coming already: it waits for a pause either way.
    this.#seen = this.#opts.activity();
    this.#movedAt = performance.now();
    this.#run ??= this.#go().catch((err: unknown) => this.#opts.log?.('search warm-up failed; searches warm up as they come', err));
    return this.#run;
  }

  /** Stops the warm-up between two turns and waits until its app and store are closed and removed. */
  async close(): Promise<void> {
    this.#stopped = true;
    await this.#run;
  }

  async #go(): Promise<void> {
    if (this.#opts.searches <= 0 || this.#deps.config.storage !== 'embedded') return;
    await rm(this.#dir, { recursive: true, force: true });
    if (!(await this.#quiet())) return;
    const secret = newSecret();
    const config: Config = Object.freeze({ ...this.#deps.config, dataDir: this.#dir, adminKey: secret, warmUpSearches: 0, index: { ...this.#deps.config.index, exactBelowRows: SHAPE.exactBelowRows } });
    let storage: Storage | null = null;
    let app: FastifyInstance | null = null;
    try {
      storage = await openStorage(config);
      // Wired as main.ts wires the real one, metrics included, but counted apart from them.
      const metrics = new Metrics(storage.indexStatus?.bind(storage), { process: false });
      const deps: Deps = { ...this.#deps, config, storage: metrics.instrument(storage) };
      await bootstrap(deps);
      app = await buildApp(deps, { metrics, logger: false });
      await this.#work(app, secret, storage);
    } finally {
      await app?.close();
      await storage?.close();
      await rm(this.#dir, { recursive: true, force: true });
    }
  }

  async #work(app: FastifyInstance, secret: string, storage: Storage): Promise<void> {
    const post = async (url: string, payload: object): Promise<void> => {
      const res = await app.inject({ method: 'POST', url, headers: { 'x-api-key': secret }, payload });
      if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
    };
    // Vectors with no meaning, the same on every start: the stand-in model's, made from the keys.
    const vectors = new FakeEmbeddingModel({ dimension: SHAPE.dimension });
    const write = async (n: number): Promise<void> => {
      const first = this.#written;
      const rows = Array.from({ length: n }, (_, i) => ({ key: `row-${first + i}`, vector_base64: encodeFloat32Base64(vectors.vectorOf(`row-${first + i}`)), metadata: { n: first + i } }));
      await post('/v1/vector/batch', { keyspace: KEYSPACE, table: TABLE, vectors: rows });
      this.#written += n;
    };
    await post('/v1/keyspaces/table/create', { keyspace: KEYSPACE, table: TABLE, dimension: SHAPE.dimension, metric: 'cosine' });
    while (this.#written < SHAPE.rows) {
      if (!(await this.#quiet())) return;
      await write(SHAPE.batch);
    }
    while ((storage.indexStatus?.() ?? []).some((t) => t.pending > 0)) {
      if (this.#stopped) return;
      await sleep(20);
    }
    const graphSearches = (): number => (storage as Partial<{ searchCounts(): { ann: number } }>).searchCounts?.().ann ?? 0;
    const graphBefore = graphSearches();
    while (this.#searched < this.#opts.searches) {
      if (!(await this.#quiet())) return;
      if (this.#searched > 0 && this.#searched % SHAPE.tailEvery === 0) await write(SHAPE.tailRows);
      for (let i = 0; i < SHAPE.turn && this.#searched < this.#opts.searches; i++) {
        const n = this.#searched;
        const v = vectors.vectorOf(`query-${n}`);
        // Both efforts the searches of docs/PERFORMANCE.md use, and both ways a client sends a vector.
        const effort = n % 2 === 0 ? { initial_top_k: 100 } : { initial_top_k: 50, ef: 128 };
        const vector = n % 4 === 3 ? { vector: Array.from(v) } : { vector_base64: encodeFloat32Base64(v) };
        await post('/v1/search/', { keyspace: KEYSPACE, table: TABLE, ...vector, final_top_k: 10, ...effort });
        this.#searched++;
      }
      this.#graphSearches = graphSearches() - graphBefore;
    }
  }

  /** Waits until the real server has had no request for QUIET_MS, then for the loop's next turn; false once stopped. */
  async #quiet(): Promise<boolean> {
    for (;;) {
      if (this.#stopped) return false;
      const count = this.#opts.activity();
      if (count !== this.#seen) {
        this.#seen = count;
        this.#movedAt = performance.now();
      }
      const left = this.#movedAt + QUIET_MS - performance.now();
      if (left <= 0) break;
      await sleep(left);
    }
    await nextTurn();
    return !this.#stopped;
  }
}
