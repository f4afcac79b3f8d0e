/**
 * Worker threads that embed bulk text (writes of many texts, file uploads) beside the main
 * thread's session, which keeps serving queries: onnxruntime-node's run() computes on the
 * calling thread, so a bulk batch on the main thread would hold every query behind it for its
 * whole length. Each thread opens its own session (`threads` intra-op threads) at a lowered CPU
 * priority (`nice`), so a query's small call on the main thread is scheduled ahead of them.
 */
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../platform/worker-url.ts';

export interface BulkPoolOptions {
  readonly modelDir: string;
  /** A model folder that loadModel has already checked. */
  readonly name: string;
  readonly dimension: number;
  /** Threads (one session each). */
  readonly workers: number;
  /** ONNX Runtime intra-op threads per session. */
  readonly threads: number;
  /** The threads' nice value (0: as the server's). */
  readonly nice: number;
  /** Most work per model call (model.ts LoadModelOptions). */
  readonly callTokens?: number;
  readonly callAttention?: number;
  readonly callRows?: number;
}

export type BulkWorkerData = Pick<BulkPoolOptions, 'modelDir' | 'name' | 'threads' | 'nice' | 'callTokens' | 'callAttention' | 'callRows'>;
export type ToBulkWorker = { id: number; texts: string[] };
export type FromBulkWorker =
  | { type: 'ready' }
  | { type: 'failed'; error: string }
  | { type: 'done'; id: number; vectors: Float32Array; tokens: Int32Array }
  | { type: 'error'; id: number; error: string };

export interface Embedded {
  vectors: Float32Array[];
  tokens: number[];
}

/** What the Embedder needs of a bulk encoder (tests may give their own). */
export interface BulkEncoder {
  /** One batch; a batch whose signal is aborted before a thread takes it is refused unstarted. */
  embed(texts: string[], signal?: AbortSignal): Promise<Embedded>;
  /** Batches waiting for a thread. */
  readonly queued: number;
  /** False once a thread has died: the Embedder then embeds bulk text itself. */
  readonly usable: boolean;
  close(): Promise<void>;
}

interface Job {
  id: number;
  texts: string[];
  resolve: (r: Embedded) => void;
  reject: (e: unknown) => void;
}

interface Thread {
  worker: Worker;
  job: Job | null;
}

export class BulkPool implements BulkEncoder {
  private readonly threads: Thread[] = [];
  private readonly waiting: Job[] = [];
  private nextId = 1;
  private broken = false;
  private closed = false;

  private constructor(private readonly dimension: number) {}

  /** Starts the threads; resolves when every one has opened the model, rejects (and stops them all) if one cannot. */
  static async start(opts: BulkPoolOptions): Promise<BulkPool> {
    if (!Number.isInteger(opts.workers) || opts.workers < 1) throw new RangeError('workers must be an integer >= 1');
    const pool = new BulkPool(opts.dimension);
    const data: BulkWorkerData = { modelDir: opts.modelDir, name: opts.name, threads: opts.threads, nice: opts.nice, callTokens: opts.callTokens, callAttention: opts.callAttention, callRows: opts.callRows };
    const starts = Array.from({ length: opts.workers }, () => pool.startThread(data));
    const results = await Promise.allSettled(starts);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) {
      await pool.close();
      throw failed.reason;
    }
    return pool;
  }

  private startThread(data: BulkWorkerData): Promise<void> {
    const worker = startWorker('embedding/bulk-embed.worker', { workerData: data });
    const thread: Thread = { worker, job: null };
    this.threads.push(thread);
    return new Promise((resolve, reject) => {
      let ready = false;
      worker.on('message', (m: FromBulkWorker) => {
        if (m.type === 'ready') {
          ready = true;
          resolve();
          this.dispatch();
        } else if (m.type === 'failed') {
          reject(new Error(`bulk embedding thread could not open model "${data.name}": ${m.error}`));
        } else {
          const job = thread.job;
          thread.job = null;
          if (job && job.id === m.id) {
            if (m.type === 'done') job.resolve(this.split(m.vectors, m.tokens));
            else job.reject(new Error(`bulk embedding failed: ${m.error}`));
          }
          this.dispatch();
        }
      });
      const die = (err: Error) => {
        if (!ready) reject(err);
        this.lose(thread, err);
      };
      worker.on('error', die);
      worker.on('exit', (code) => {
        if (!this.closed) die(new Error(`bulk embedding thread exited (code ${code})`));
      });
    });
  }

  private split(flat: Float32Array, tokens: Int32Array): Embedded {
    const d = this.dimension;
    // Copies, not views of one buffer: each vector is its own array, as the model gives them.
    const vectors = Array.from({ length: tokens.length }, (_, i) => flat.slice(i * d, (i + 1) * d));
    return { vectors, tokens: Array.from(tokens) };
  }

  /** A thread died: its batch fails, and the pool is no longer used (the Embedder falls back to itself). */
  private lose(thread: Thread, err: Error): void {
    this.broken = true;
    const job = thread.job;
    thread.job = null;
    job?.reject(err);
    const i = this.threads.indexOf(thread);
    if (i >= 0) this.threads.splice(i, 1);
    if (this.threads.length === 0) for (const j of this.waiting.splice(0)) j.reject(err);
  }

  get queued(): number {
    return this.waiting.length;
  }

  get usable(): boolean {
    return !this.broken && !this.closed;
  }

  embed(texts: string[], signal?: AbortSignal): Promise<Embedded> {
    if (this.closed) return Promise.reject(new Error('bulk embedding pool is closed'));
    if (this.threads.length === 0) return Promise.reject(new Error('bulk embedding pool has no threads left'));
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const job: Job = { id: this.nextId++, texts, resolve, reject };
      this.waiting.push(job);
      // Leaves the queue as soon as the caller gives up, not when a thread comes free.
      signal?.addEventListener('abort', () => {
        const i = this.waiting.indexOf(job);
        if (i < 0) return; // started (or done): it runs to its end
        this.waiting.splice(i, 1);
        reject(signal.reason);
      }, { once: true });
      this.dispatch();
    });
  }

  private dispatch(): void {
    for (const thread of this.threads) {
      if (thread.job) continue;
      const job = this.waiting.shift();
      if (!job) return;
      thread.job = job;
      thread.worker.postMessage({ id: job.id, texts: job.texts } satisfies ToBulkWorker);
    }
  }

  /** Refuses what still waits, lets the batches in progress end, and stops the threads. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const j of this.waiting.splice(0)) j.reject(new Error('bulk embedding pool is closed'));
    await Promise.all(
      this.threads.map(async (t) => {
        if (t.job) await new Promise<void>((r) => { const done = () => r(); t.worker.once('message', done); t.worker.once('exit', done); });
        await t.worker.terminate();
      }),
    );
    this.threads.length = 0;
  }
}
