import { setMaxListeners } from 'node:events';
import { ServiceError } from '../errors.ts';
import type { BulkEncoder, Embedded } from './bulk-pool.ts';
import type { EmbeddingModel } from './model.ts';

export interface EmbedderOptions {
  /** Most texts per model call. */
  readonly maxBatch: number;
  /** How long the first waiting text waits for company before a model call starts. */
  readonly batchWindowMs: number;
  /** LRU cache entries keyed by text; 0 disables the cache. */
  readonly cacheEntries: number;
  /** Told of every model call (for metrics): texts in it, and its duration. */
  readonly onBatch?: (model: string, size: number, ms: number, ok: boolean) => void;
  /**
   * Starts the threads that embed bulk text (bulk-pool.ts), called on the first bulk call. Until
   * they are ready, or without them, bulk text is embedded here, one batch at a time after any
   * query waiting.
   */
  readonly startBulk?: () => Promise<BulkEncoder>;
}

/** How a caller's texts are served. */
export interface EmbedOptions {
  /**
   * Bulk text (a write of many texts, an upload): on the bulk threads when there are any, and
   * here only when no query is waiting. Queries (the default) never wait behind bulk batches.
   */
  readonly bulk?: boolean;
  /** Bulk only: when it aborts, batches not yet started are dropped and the call rejects with its reason. */
  readonly signal?: AbortSignal;
}

/** Texts longer than this (in UTF-16 code units) are never cached, to bound memory. */
export const CACHE_MAX_TEXT_CHARS = 1000;

/** Upper bounds of the batch-size histogram buckets (the last bucket is open-ended). */
export const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256] as const;

export interface EmbedderStats {
  /** embed/embedWithUsage calls. */
  requests: number;
  /** Texts asked for, cache hits included. */
  requestedTexts: number;
  /** Model calls made and texts sent to the model (after cache and de-duplication). */
  calls: number;
  texts: number;
  tokens: number;
  cacheHits: number;
  cacheMisses: number;
  cacheSize: number;
  /** Failed model calls. */
  errors: number;
  /** Texts waiting for a model call on this thread right now (queries and bulk). */
  queued: number;
  /** Bulk batches waiting for a bulk thread, and whether bulk threads serve bulk text (false: it runs here). */
  bulkQueued: number;
  bulkThreads: boolean;
  /** Model calls by batch size: `batchSizes[i]` counts calls with size <= BATCH_BUCKETS[i] (and > the previous bound); the extra last slot counts larger ones. */
  batchSizes: number[];
  /** Sizes of the most recent model calls, oldest first (at most 32). */
  lastBatchSizes: number[];
  /** Total time spent inside model calls, in ms. */
  modelMs: number;
}

interface CacheEntry {
  vector: Float32Array;
  tokens: number;
}

/** One caller's request. */
interface Request {
  vectors: Float32Array[];
  tokens: number[];
  remaining: number;
  settled: boolean;
  resolve: (r: { vectors: Float32Array[]; tokens: number[] }) => void;
  reject: (e: unknown) => void;
}

/** One text of one request waiting for the model. */
interface Pending {
  req: Request;
  index: number;
  text: string;
}

const LAST_SIZES = 32;

/**
 * Wraps one EmbeddingModel: micro-batches concurrent callers, sorts texts by token length so
 * similar lengths share a model call (padding is paid for), de-duplicates texts, and answers
 * repeated texts from an LRU cache. Model calls run one at a time (ONNX Runtime runs on the JS
 * thread; its own threads parallelise inside a call). Bulk text goes to the bulk threads
 * (EmbedderOptions.startBulk) so that queries keep this thread's model to themselves.
 */
export class Embedder {
  readonly model: EmbeddingModel;
  private readonly maxBatch: number;
  private readonly windowMs: number;
  private readonly cacheEntries: number;
  private readonly cache = new Map<string, CacheEntry>();
  private pending: Pending[] = [];
  /** Bulk texts to embed here (no bulk threads yet): taken a batch at a time, only when no query waits. */
  private pendingBulk: Pending[] = [];
  private readonly startBulk: EmbedderOptions['startBulk'];
  private bulkEncoder: BulkEncoder | undefined;
  private bulkStarting: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  /** A flush is running (at most one at a time). */
  private flushing: Promise<void> | undefined;
  private closed = false;
  private readonly s = {
    requests: 0,
    requestedTexts: 0,
    calls: 0,
    texts: 0,
    tokens: 0,
    cacheHits: 0,
    cacheMisses: 0,
    errors: 0,
    modelMs: 0,
    batchSizes: new Array<number>(BATCH_BUCKETS.length + 1).fill(0),
    lastBatchSizes: [] as number[],
  };

  private readonly onBatch: EmbedderOptions['onBatch'];

  constructor(model: EmbeddingModel, opts: EmbedderOptions) {
    if (!Number.isInteger(opts.maxBatch) || opts.maxBatch < 1) throw new RangeError('maxBatch must be an integer >= 1');
    if (!(opts.batchWindowMs >= 0)) throw new RangeError('batchWindowMs must be >= 0');
    if (!Number.isInteger(opts.cacheEntries) || opts.cacheEntries < 0) throw new RangeError('cacheEntries must be an integer >= 0');
    this.model = model;
    this.maxBatch = opts.maxBatch;
    this.windowMs = opts.batchWindowMs;
    this.cacheEntries = opts.cacheEntries;
    this.onBatch = opts.onBatch;
    this.startBulk = opts.startBulk;
  }

  get name(): string {
    return this.model.name;
  }
  get dimension(): number {
    return this.model.dimension;
  }
  get maxTokens(): number {
    return this.model.maxTokens;
  }

  /** One vector per text, in order. The arrays are the caller's own (safe to modify). */
  async embed(texts: string[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    return (await this.embedWithUsage(texts, opts)).vectors;
  }

  /** Vectors plus each text's token count (specials included, after truncation), for usage reporting. */
  embedWithUsage(texts: string[], opts: EmbedOptions = {}): Promise<Embedded> {
    if (this.closed) return Promise.reject(new ServiceError('not_ready', `model ${this.model.name} is shut down`));
    this.s.requests++;
    this.s.requestedTexts += texts.length;
    const n = texts.length;
    const vectors = new Array<Float32Array>(n);
    const tokens = new Array<number>(n);
    const misses: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = texts[i];
      if (typeof t !== 'string') return Promise.reject(new TypeError(`embed() takes strings (item ${i} is ${typeof t})`));
      const hit = this.cacheGet(t);
      if (hit) {
        vectors[i] = hit.vector.slice();
        tokens[i] = hit.tokens;
      } else {
        misses.push(i);
      }
    }
    if (misses.length === 0) return Promise.resolve({ vectors, tokens });
    if (opts.bulk) {
      if (opts.signal?.aborted) return Promise.reject(opts.signal.reason);
      this.bulkStarting ??= this.startBulkThreads();
      if (this.bulkEncoder?.usable) return this.embedOnBulkThreads(this.bulkEncoder, texts, misses, { vectors, tokens }, opts.signal);
    }

    return new Promise((resolve, reject) => {
      const req: Request = { vectors, tokens, remaining: misses.length, settled: false, resolve, reject };
      const queue = opts.bulk ? this.pendingBulk : this.pending;
      for (const i of misses) queue.push({ req, index: i, text: texts[i] });
      if (opts.bulk && opts.signal) opts.signal.addEventListener('abort', () => this.fail(req, opts.signal!.reason), { once: true });
      this.schedule();
    });
  }

  // ---- bulk threads ----

  /** Starts the bulk threads once; a failure leaves bulk text to this thread. */
  private async startBulkThreads(): Promise<void> {
    if (!this.startBulk) return;
    try {
      const encoder = await this.startBulk();
      if (this.closed) await encoder.close();
      else this.bulkEncoder = encoder;
    } catch {
      // Bulk text is embedded here instead: slower, and still after every query waiting.
    }
  }

  /**
   * The texts at `misses`, de-duplicated and sorted by length (character length: counting tokens
   * here would tokenise every text twice on this thread), cut in batches of at most maxBatch,
   * all handed to the bulk threads at once, so every thread has work while this one stores.
   */
  private async embedOnBulkThreads(encoder: BulkEncoder, texts: string[], misses: number[], out: Embedded, signal?: AbortSignal): Promise<Embedded> {
    const where = new Map<string, number[]>();
    for (const i of misses) {
      const at = where.get(texts[i]);
      if (at) at.push(i);
      else where.set(texts[i], [i]);
    }
    const unique = [...where.keys()].sort((a, b) => a.length - b.length);
    // A failed batch drops the ones not yet started, as the caller's abort does.
    const stop = new AbortController();
    setMaxListeners(0, stop.signal); // one listener per batch handed over, however many
    const onAbort = () => stop.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const batch = async (slice: string[]): Promise<void> => {
      this.recordBatch(slice.length);
      const t0 = performance.now();
      let r: Embedded;
      try {
        r = await encoder.embed(slice, stop.signal);
        if (r.vectors.length !== slice.length || r.tokens.length !== slice.length) {
          throw new Error(`model ${this.model.name} returned ${r.vectors.length} vectors for ${slice.length} texts`);
        }
      } catch (err) {
        if (!stop.signal.aborted) this.s.errors++;
        this.onBatch?.(this.model.name, slice.length, performance.now() - t0, false);
        stop.abort(err);
        throw err;
      } finally {
        this.s.modelMs += performance.now() - t0;
      }
      this.onBatch?.(this.model.name, slice.length, performance.now() - t0, true);
      slice.forEach((text, j) => {
        this.s.tokens += r.tokens[j];
        this.cachePut(text, r.vectors[j], r.tokens[j]);
        where.get(text)!.forEach((i, k) => {
          out.vectors[i] = k === 0 ? r.vectors[j] : r.vectors[j].slice();
          out.tokens[i] = r.tokens[j];
        });
      });
    };
    const batches: Promise<void>[] = [];
    for (let start = 0; start < unique.length; start += this.maxBatch) batches.push(batch(unique.slice(start, start + this.maxBatch)));
    try {
      const settled = await Promise.allSettled(batches);
      if (stop.signal.aborted) throw stop.signal.reason;
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      return out;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  stats(): EmbedderStats {
    return {
      requests: this.s.requests,
      requestedTexts: this.s.requestedTexts,
      calls: this.s.calls,
      texts: this.s.texts,
      tokens: this.s.tokens,
      cacheHits: this.s.cacheHits,
      cacheMisses: this.s.cacheMisses,
      cacheSize: this.cache.size,
      errors: this.s.errors,
      queued: this.pending.length + this.pendingBulk.length,
      bulkQueued: this.bulkEncoder?.queued ?? 0,
      bulkThreads: this.bulkEncoder?.usable ?? false,
      batchSizes: [...this.s.batchSizes],
      lastBatchSizes: [...this.s.lastBatchSizes],
      modelMs: this.s.modelMs,
    };
  }

  /** Finishes queued work, then refuses new calls. Does not dispose the model. */
  async close(): Promise<void> {
    this.closed = true;
    await this.bulkStarting;
    await this.bulkEncoder?.close();
    while (this.pending.length > 0 || this.pendingBulk.length > 0 || this.flushing) {
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
      if (!this.flushing) this.startFlush();
      await this.flushing;
    }
  }

  // ---- cache ----

  private cacheGet(text: string): CacheEntry | undefined {
    if (this.cacheEntries === 0 || text.length > CACHE_MAX_TEXT_CHARS) return undefined;
    const e = this.cache.get(text);
    if (e === undefined) {
      this.s.cacheMisses++;
      return undefined;
    }
    this.s.cacheHits++;
    this.cache.delete(text); // move to most-recent
    this.cache.set(text, e);
    return e;
  }

  private cachePut(text: string, vector: Float32Array, tokens: number): void {
    if (this.cacheEntries === 0 || text.length > CACHE_MAX_TEXT_CHARS) return;
    this.cache.delete(text);
    this.cache.set(text, { vector: vector.slice(), tokens });
    while (this.cache.size > this.cacheEntries) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
  }

  // ---- batching ----

  private schedule(): void {
    if (this.flushing) return; // the running flush picks the new texts up when it ends
    if (this.pending.length >= this.maxBatch) {
      // A full batch is waiting: no point in waiting for more.
      if (this.timer) {
        clearTimeout(this.timer);
        this.timer = undefined;
      }
      this.startFlush();
      return;
    }
    if (this.timer || this.immediate) return;
    if (this.windowMs === 0) {
      // No window: texts of the same event-loop turn go together, and texts that arrive while
      // the model is busy queue for its next call, so batches form under load without adding
      // latency to a lone query (the model call itself is the window).
      this.immediate = setImmediate(() => {
        this.immediate = undefined;
        if (!this.flushing) this.startFlush();
      });
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.flushing) this.startFlush();
    }, this.windowMs);
  }

  private startFlush(): void {
    this.flushing = this.flush().finally(() => {
      this.flushing = undefined;
      // Texts that arrived during the flush have waited at least as long as a window.
      if (this.pending.length > 0 || this.pendingBulk.length > 0) this.startFlush();
    });
  }

  private async flush(): Promise<void> {
    // Every query waiting; else one batch of bulk texts, so a query that comes meanwhile waits
    // for that one batch at most.
    const items = this.pending.length > 0 ? this.pending.splice(0) : this.takeBulkBatch();

    // De-duplicate: one model input per distinct text, shared by every item asking for it.
    const groups = new Map<string, Pending[]>();
    for (const it of items) {
      const g = groups.get(it.text);
      if (g) g.push(it);
      else groups.set(it.text, [it]);
    }
    const unique = [...groups.keys()].map((text) => ({ text, len: this.lengthOf(text) }));
    unique.sort((a, b) => a.len - b.len);

    for (let start = 0; start < unique.length; start += this.maxBatch) {
      let slice = unique.slice(start, start + this.maxBatch);
      // Skip texts whose every caller has already failed.
      slice = slice.filter((u) => groups.get(u.text)!.some((p) => !p.req.settled));
      if (slice.length === 0) continue;
      const texts = slice.map((u) => u.text);
      this.recordBatch(texts.length);
      const t0 = performance.now();
      let result: { vectors: Float32Array[]; tokens: number[] };
      try {
        result = await this.model.embed(texts);
        if (result.vectors.length !== texts.length || result.tokens.length !== texts.length) {
          throw new Error(`model ${this.model.name} returned ${result.vectors.length} vectors for ${texts.length} texts`);
        }
      } catch (err) {
        this.s.errors++;
        this.s.modelMs += performance.now() - t0;
        this.onBatch?.(this.model.name, texts.length, performance.now() - t0, false);
        for (const t of texts) for (const p of groups.get(t)!) this.fail(p.req, err);
        continue;
      }
      this.s.modelMs += performance.now() - t0;
      this.onBatch?.(this.model.name, texts.length, performance.now() - t0, true);
      for (let i = 0; i < texts.length; i++) {
        const vec = result.vectors[i];
        const tok = result.tokens[i];
        this.s.tokens += tok;
        this.cachePut(texts[i], vec, tok);
        let first = true;
        for (const p of groups.get(texts[i])!) {
          if (p.req.settled) continue;
          p.req.vectors[p.index] = first ? vec : vec.slice();
          p.req.tokens[p.index] = tok;
          first = false;
          if (--p.req.remaining === 0) {
            p.req.settled = true;
            p.req.resolve({ vectors: p.req.vectors, tokens: p.req.tokens });
          }
        }
      }
    }
  }

  /** Up to maxBatch distinct bulk texts (with every copy of each waiting), first come first. */
  private takeBulkBatch(): Pending[] {
    const texts = new Set<string>();
    const taken: Pending[] = [];
    const left: Pending[] = [];
    for (const p of this.pendingBulk) {
      if (p.req.settled) continue;
      if (texts.has(p.text) || texts.size < this.maxBatch) {
        texts.add(p.text);
        taken.push(p);
      } else {
        left.push(p);
      }
    }
    this.pendingBulk = left;
    return taken;
  }

  /** Sort key: token count when the model can tell cheaply, else the text length. */
  private lengthOf(text: string): number {
    try {
      return this.model.countTokens(text);
    } catch {
      return text.length;
    }
  }

  private fail(req: Request, err: unknown): void {
    if (req.settled) return;
    req.settled = true;
    req.reject(err);
  }

  private recordBatch(size: number): void {
    this.s.calls++;
    this.s.texts += size;
    let b = BATCH_BUCKETS.findIndex((ub) => size <= ub);
    if (b < 0) b = BATCH_BUCKETS.length;
    this.s.batchSizes[b]++;
    this.s.lastBatchSizes.push(size);
    if (this.s.lastBatchSizes.length > LAST_SIZES) this.s.lastBatchSizes.shift();
  }
}
