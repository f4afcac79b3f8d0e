import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/config.ts';
import { ServiceError } from '../errors.ts';
import { BulkPool } from './bulk-pool.ts';
import { Embedder, type EmbedderOptions } from './embedder.ts';
import { loadModel, readModelInfo, type EmbeddingModel, type LoadModelOptions } from './model.ts';

export interface ModelRegistryOptions extends Pick<Config, 'modelDir' | 'defaultModel'> {
  readonly embedding: EmbedderOptions;
  /**
   * Threads for bulk text, per model, started on its first bulk call (bulk-pool.ts). Absent, or
   * 0 workers, or with a test's own `load`: bulk text runs on the main thread between queries.
   */
  readonly embedBulk?: Config['embedBulk'];
  /** ONNX Runtime threads per model (default: see model.ts DEFAULT_THREADS). */
  readonly threads?: number;
  /** Most work per model call (default: model.ts DEFAULT_CALL_TOKENS, DEFAULT_CALL_ATTENTION). */
  readonly embedCall?: Config['embedCall'];
  /** How to load a model; tests may replace it. Default: loadModel. */
  readonly load?: (modelDir: string, name: string, opts: LoadModelOptions) => Promise<EmbeddingModel>;
}

export interface ModelListing {
  name: string;
  dimension: number;
  maxTokens: number;
  ready: boolean;
}

type Slot =
  | { state: 'idle'; dimension: number; maxTokens: number }
  | { state: 'loading'; dimension: number; maxTokens: number; promise: Promise<void> }
  | { state: 'ready'; dimension: number; maxTokens: number; embedder: Embedder }
  | { state: 'failed'; dimension: number; maxTokens: number; error: Error };

const DEFAULT_EMBEDDING: EmbedderOptions = { maxBatch: 32, batchWindowMs: 0, cacheEntries: 2048 };

// Synchronous, as readModelInfo's reads (model.ts): small, and start() reaches the checksum worker at once.
const isFile = (p: string): boolean => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
};

/**
 * The embedding models the service knows: the default model (loaded by start()) and every other
 * folder in modelDir with onnx/model.onnx and SHA256SUMS (loaded in the background after the
 * default, or on first use). get() never waits: a model still loading is `not_ready`.
 */
export class ModelRegistry {
  private readonly opts: ModelRegistryOptions;
  private readonly slots = new Map<string, Slot>();
  private readonly defaultName: string;
  private closed = false;
  private started: Promise<void> | undefined;
  private discovered: Promise<void> | undefined;
  private readonly loadedListeners: ((model: EmbeddingModel) => void)[] = [];

  constructor(opts: ModelRegistryOptions) {
    this.opts = opts;
    this.defaultName = opts.defaultModel;
  }

  /** A registry over already-loaded models (the first is the default), for tests and embedding fakes. */
  static fromModels(
    models: EmbeddingModel[],
    opts: { defaultModel?: string; embedding?: EmbedderOptions } = {},
  ): ModelRegistry {
    if (models.length === 0) throw new Error('fromModels needs at least one model');
    const embedding = opts.embedding ?? DEFAULT_EMBEDDING;
    const reg = new ModelRegistry({ modelDir: '', defaultModel: opts.defaultModel ?? models[0].name, embedding });
    for (const m of models) {
      if (reg.slots.has(m.name)) throw new Error(`two models named "${m.name}"`);
      reg.slots.set(m.name, { state: 'ready', dimension: m.dimension, maxTokens: m.maxTokens, embedder: new Embedder(m, embedding) });
    }
    if (!reg.slots.has(reg.defaultName)) throw new Error(`default model "${reg.defaultName}" is not among the given models`);
    reg.started = Promise.resolve();
    reg.discovered = Promise.resolve();
    return reg;
  }

  /**
   * Finds the models in modelDir and loads the default one (rejects if it cannot); the others
   * load one after another in the background.
   */
  start(): Promise<void> {
    this.started ??= this.doStart();
    return this.started;
  }

  /**
   * Reads which models exist and their dimensions, without loading any (fast); start() does
   * this first. Callers that need dimensions before the model is ready (bootstrap) await it.
   */
  discover(): Promise<void> {
    this.discovered ??= this.doDiscover();
    return this.discovered;
  }

  private async doStart(): Promise<void> {
    await this.discover();
    await this.ensureLoading(this.defaultName);
    const slot = this.slots.get(this.defaultName)!;
    if (slot.state === 'failed') throw slot.error;
    // Others in the background, one at a time, so they do not compete with requests for the CPU.
    void (async () => {
      for (const name of this.slots.keys()) {
        if (this.closed) return;
        await this.ensureLoading(name);
      }
    })();
  }

  private async doDiscover(): Promise<void> {
    const { modelDir } = this.opts;
    // The default model must exist; readModelInfo says where it looked if not.
    const def = await readModelInfo(modelDir, this.defaultName);
    this.slots.set(this.defaultName, { state: 'idle', dimension: def.dimension, maxTokens: def.maxTokens });
    let entries: string[] = [];
    try {
      entries = readdirSync(modelDir, { withFileTypes: true }).filter((d) => d.isDirectory() || d.isSymbolicLink()).map((d) => d.name);
    } catch {
      // readModelInfo above succeeded, so this is unlikely; the default model alone is fine.
    }
    for (const name of entries.sort()) {
      if (name === this.defaultName || name.startsWith('.')) continue;
      const dir = path.join(modelDir, name);
      if (!isFile(path.join(dir, 'onnx', 'model.onnx')) || !isFile(path.join(dir, 'SHA256SUMS'))) continue;
      try {
        const info = await readModelInfo(modelDir, name);
        this.slots.set(name, { state: 'idle', dimension: info.dimension, maxTokens: info.maxTokens });
      } catch {
        // Not a usable model folder (no config.json etc.): not offered.
      }
    }
  }

  /** Starts loading `name` if idle; resolves when it is ready or failed. */
  private ensureLoading(name: string): Promise<void> {
    const slot = this.slots.get(name);
    if (!slot) return Promise.resolve();
    if (slot.state === 'loading') return slot.promise;
    if (slot.state !== 'idle' || this.closed) return Promise.resolve();
    const load = this.opts.load ?? loadModel;
    const promise = (async () => {
      try {
        const model = await load(this.opts.modelDir, name, { ...this.callBudget(), ...(this.opts.threads === undefined ? {} : { threads: this.opts.threads }) });
        if (this.closed) {
          await model.dispose();
          return;
        }
        this.slots.set(name, { state: 'ready', dimension: model.dimension, maxTokens: model.maxTokens, embedder: new Embedder(model, this.embedderOptions(model)) });
      } catch (e) {
        const error = e instanceof Error ? e : new Error(String(e));
        this.slots.set(name, { state: 'failed', dimension: slot.dimension, maxTokens: slot.maxTokens, error });
        return;
      }
      // Outside the load's try: what a listener does with the model cannot fail the model.
      const ready = this.slots.get(name);
      if (ready?.state === 'ready') for (const listener of this.loadedListeners) listener(ready.embedder.model);
    })();
    this.slots.set(name, { state: 'loading', dimension: slot.dimension, maxTokens: slot.maxTokens, promise });
    return promise;
  }

  private callBudget(): Pick<LoadModelOptions, 'callTokens' | 'callAttention' | 'callRows'> {
    const c = this.opts.embedCall;
    // The Embedder never sends a call more texts than maxBatch: the model warms up to that.
    const rows = { callRows: this.opts.embedding.maxBatch };
    return c ? { callTokens: c.tokens, callAttention: c.attention, ...rows } : rows;
  }

  /** The embedding options for a loaded model: the configured ones, and its bulk threads if any. */
  private embedderOptions(model: EmbeddingModel): EmbedderOptions {
    const bulk = this.opts.embedBulk;
    // A test's own loader gives models that are not files the threads could open.
    if (!bulk || bulk.workers === 0 || this.opts.load) return this.opts.embedding;
    const { modelDir } = this.opts;
    return { ...this.opts.embedding, startBulk: () => BulkPool.start({ modelDir, name: model.name, dimension: model.dimension, ...bulk, ...this.callBudget() }) };
  }

  /** Calls `listener` with every model that is loaded now and every one that loads later. */
  whenLoaded(listener: (model: EmbeddingModel) => void): void {
    this.loadedListeners.push(listener);
    for (const s of this.slots.values()) if (s.state === 'ready') listener(s.embedder.model);
  }

  /** The default model is loaded. */
  ready(): boolean {
    return this.slots.get(this.defaultName)?.state === 'ready' && !this.closed;
  }

  get defaultModel(): string {
    return this.defaultName;
  }

  names(): string[] {
    return [...this.slots.keys()];
  }

  has(name: string): boolean {
    return this.slots.has(name);
  }

  /** `field`: where the request named the model (a JSON pointer), for the unknown_model answer. */
  private slot(name: string | undefined, field?: string): [string, Slot] {
    const n = name ?? this.defaultName;
    const slot = this.slots.get(n);
    if (!slot) {
      if (n === this.defaultName) throw new ServiceError('not_ready', `model ${n} is loading`);
      const errors = field === undefined ? undefined : [{ path: field, message: `is not a known model; valid: ${this.names().join(', ')}` }];
      throw new ServiceError('unknown_model', `unknown model "${n}"`, { errors, extra: { valid: this.names() } });
    }
    return [n, slot];
  }

  /** The embedder for `name` (default model if omitted). Throws unknown_model or not_ready. */
  get(name?: string, field?: string): Embedder {
    const [n, slot] = this.slot(name, field);
    if (this.closed) throw new ServiceError('not_ready', `model ${n} is shut down`);
    switch (slot.state) {
      case 'ready':
        return slot.embedder;
      case 'idle':
        void this.ensureLoading(n);
        throw new ServiceError('not_ready', `model ${n} is loading`);
      case 'loading':
        throw new ServiceError('not_ready', `model ${n} is loading`);
      case 'failed':
        throw new ServiceError('internal', `model ${n} failed to load`, { cause: slot.error });
    }
  }

  /** The vector dimension of `name` (default model if omitted), known before the model loads. */
  dimension(name?: string, field?: string): number {
    return this.slot(name, field)[1].dimension;
  }

  list(): ModelListing[] {
    return [...this.slots].map(([name, s]) => ({ name, dimension: s.dimension, maxTokens: s.maxTokens, ready: s.state === 'ready' && !this.closed }));
  }

  /** Finishes queued embeddings, then releases every model. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(
      [...this.slots.values()].map(async (s) => {
        if (s.state === 'loading') await s.promise; // the loader disposes a model that finishes after close
        const cur = s.state === 'ready' ? s : undefined;
        if (cur) {
          await cur.embedder.close();
          await cur.embedder.model.dispose();
        }
      }),
    );
  }
}
