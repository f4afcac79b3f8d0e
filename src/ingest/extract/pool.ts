/**
 * Extraction processes, pooled: every file is parsed in a child process (extract.worker.ts) with a memory
 * ceiling (RLIMIT_DATA through util-linux's prlimit, which counts the ArrayBuffers pdf.js decodes
 * into, plus V8's heap limit) and a wall-clock limit; one that passes either is killed and the
 * upload answered 422. At most `workers` run at once; up to `queue` more uploads wait their turn,
 * past that a 429. Idle processes stay for the next file a while, then exit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ServiceError } from '../../errors.ts';
import type { FileType } from '../detect.ts';
import type { ExtractJob, ExtractReply } from './protocol.ts';
import type { Extracted, ExtractLimits } from './types.ts';

export interface ExtractPoolOptions {
  /** Processes extracting at once. */
  workers: number;
  /** Memory ceiling of each process, MiB. */
  memoryMb: number;
  /** Wall-clock limit of one file, ms. */
  timeoutMs: number;
  /** Uploads that may wait for a process; more are refused (429). */
  queue: number;
  limits: ExtractLimits;
  /** How long an idle process is kept for the next file (default 30 s). */
  idleMs?: number;
}

export interface ExtractOutput {
  type: FileType;
  extracted: Extracted;
}

const MiB = 1024 * 1024;
const PRLIMIT = ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => existsSync(p));
const START_TIMEOUT_MS = 30_000;

/**
 * Bytes of the read-write-execute mappings in a /proc/<pid>/maps text: V8's code range. From Node
 * 24 (V8 13) V8 maps its whole code range (~510 MiB, nearly all of it never touched) so at start,
 * and RLIMIT_DATA counts it: under a 512 MiB ceiling a child could not even start.
 */
export function executableWritableBytes(maps: string): number {
  let total = 0;
  for (const line of maps.split('\n')) {
    const [range, perms] = line.split(' ');
    if (!perms?.startsWith('rwx')) continue;
    const [from, to] = range.split('-').map((h) => parseInt(h, 16));
    if (to > from) total += to - from;
  }
  return total;
}

/** What the ceiling adds for the code range: a child runs the same node as this process, so it maps the same. */
let codeRangeAllowance: number | undefined;
function codeRange(): number {
  if (codeRangeAllowance === undefined) {
    try {
      codeRangeAllowance = executableWritableBytes(readFileSync('/proc/self/maps', 'utf8'));
    } catch {
      codeRangeAllowance = 0;
    }
  }
  return codeRangeAllowance;
}

/** The worker module beside this one: TypeScript run through tsx from source, the esbuild entry `extract.worker.mjs` from the bundle. */
function workerCommand(memoryMb: number): { cmd: string; args: string[]; cwd: string } {
  const fromSource = import.meta.url.endsWith('.ts');
  const file = fileURLToPath(new URL(fromSource ? './extract.worker.ts' : './extract.worker.mjs', import.meta.url));
  const node = [...(fromSource ? ['--import', 'tsx'] : []), `--max-old-space-size=${memoryMb}`, file];
  // cwd beside the module, so that `--import tsx` resolves from the project's node_modules.
  const cwd = path.dirname(file);
  if (PRLIMIT === undefined) return { cmd: process.execPath, args: node, cwd };
  return { cmd: PRLIMIT, args: [`--data=${memoryMb * MiB + codeRange()}`, '--', process.execPath, ...node], cwd };
}

const fileError = (code: 'unprocessable_file' | 'internal', message: string, limit?: string): ServiceError =>
  new ServiceError(code, message, { errors: [{ path: '/file', message }], ...(limit ? { extra: { limit } } : {}) });

class Worker {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  alive = true;
  idleTimer?: NodeJS.Timeout;

  constructor(memoryMb: number) {
    const { cmd, args, cwd } = workerCommand(memoryMb);
    // No environment: nothing of the server's settings (keys, passwords) reaches the parsers.
    this.child = spawn(cmd, args, { cwd, env: {}, stdio: ['ignore', 'ignore', 'ignore', 'ipc'], serialization: 'advanced' });
    this.child.once('exit', () => (this.alive = false));
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error('did not start in time')), START_TIMEOUT_MS);
      const fail = (e: Error) => {
        clearTimeout(timer);
        void this.kill();
        reject(fileError('internal', `the extraction process could not start: ${e.message}`));
      };
      this.child.once('error', fail);
      this.child.once('exit', (code, sig) => fail(new Error(`it exited (${sig ?? code})`)));
      this.child.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.ready.catch(() => undefined);
  }

  /** Keeps the server's event loop alive only while a file is being read. */
  hold(on: boolean): void {
    if (on) {
      this.child.ref();
      this.child.channel?.ref();
    } else {
      this.child.unref();
      this.child.channel?.unref();
    }
  }

  /** Resolves once the process is gone. */
  kill(): Promise<void> {
    this.alive = false;
    if (this.child.exitCode !== null || this.child.signalCode !== null) return Promise.resolve();
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.ref(); // an idle process is unref'd: waiting for its exit must keep the loop alive
    this.child.kill('SIGKILL');
    return gone;
  }
}

export class ExtractPool {
  readonly #opts: ExtractPoolOptions;
  readonly #idle: Worker[] = [];
  readonly #waiting: Array<() => void> = [];
  /** Files holding a turn: being read, or about to be. */
  #running = 0;
  #peak = 0;
  #nextId = 1;
  #closed = false;

  constructor(opts: ExtractPoolOptions) {
    this.#opts = opts;
  }

  /** Files being read now. */
  get running(): number {
    return this.#running;
  }

  /** The most files read at once since the start. */
  get peakRunning(): number {
    return this.#peak;
  }

  /**
   * The file's type (by content) and text, from an extraction process. Throws what extractText
   * throws (400, 413, 415), unprocessable_file (422) when the process passed its memory or time
   * limit, rate_limited (429) when the queue is full, request_aborted when `signal` fires first.
   */
  async extract(bytes: Buffer, fileName: string, opts: { limits?: Partial<ExtractLimits>; signal?: AbortSignal } = {}): Promise<ExtractOutput> {
    await this.#turn();
    this.#peak = Math.max(this.#peak, this.#running);
    let worker: Worker | undefined;
    try {
      worker = this.#idleWorker() ?? new Worker(this.#opts.memoryMb);
      clearTimeout(worker.idleTimer);
      worker.hold(true);
      await worker.ready;
      const job: ExtractJob = { id: this.#nextId++, bytes, fileName, limits: { ...this.#opts.limits, ...opts.limits } };
      return await this.#run(worker, job, opts.signal);
    } finally {
      if (worker) await this.#park(worker);
      // The turn passes to the first waiting file, or is given back.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }

  /** Kills every idle process (resolves once they are gone); files being read finish first. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#idle.splice(0).map((w) => w.kill()));
  }

  /** An idle process still alive (one may have been killed from outside meanwhile). */
  #idleWorker(): Worker | undefined {
    for (let w = this.#idle.pop(); w !== undefined; w = this.#idle.pop()) {
      if (w.alive) return w;
      clearTimeout(w.idleTimer);
    }
    return undefined;
  }

  /** A turn to read a file, taken synchronously when one is free (so that N calls at once count right). */
  #turn(): Promise<void> {
    if (this.#running < this.#opts.workers) {
      this.#running++;
      return Promise.resolve();
    }
    if (this.#waiting.length >= this.#opts.queue) {
      return Promise.reject(
        new ServiceError('rate_limited', `${this.#running} files are being read and ${this.#waiting.length} wait; retry in a few seconds.`, {
          headers: { 'retry-after': '5' },
          extra: { limit: 'extract_queue' },
        }),
      );
    }
    return new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  async #park(worker: Worker): Promise<void> {
    worker.hold(false);
    if (!worker.alive || this.#closed) {
      await worker.kill();
      return;
    }
    this.#idle.push(worker);
    worker.idleTimer = setTimeout(() => {
      const i = this.#idle.indexOf(worker);
      if (i >= 0) this.#idle.splice(i, 1);
      void worker.kill();
    }, this.#opts.idleMs ?? 30_000);
    worker.idleTimer.unref();
  }

  #run(worker: Worker, job: ExtractJob, signal?: AbortSignal): Promise<ExtractOutput> {
    const { memoryMb, timeoutMs } = this.#opts;
    const child = worker.child;
    return new Promise<ExtractOutput>((resolve, reject) => {
      let done = false;
      const finish = (kill: boolean, outcome: () => void): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        signal?.removeEventListener('abort', onAbort);
        // Settled once a killed process is gone, so that its memory is free again.
        if (kill) void worker.kill().then(outcome);
        else outcome();
      };
      const outOfMemory = () => reject(fileError('unprocessable_file', `the file could not be read within the extraction memory limit of ${memoryMb} MiB`, 'extract_max_memory_mb'));
      const timer = setTimeout(
        () => finish(true, () => reject(fileError('unprocessable_file', `the file could not be read within the extraction time limit of ${timeoutMs} ms`, 'extract_timeout_ms'))),
        timeoutMs,
      );
      const onMessage = (m: ExtractReply) => {
        if (m.id !== job.id) return;
        if (m.ok) return finish(false, () => resolve({ type: m.type, extracted: m.extracted }));
        if (m.error) {
          const e = m.error;
          return finish(false, () => reject(new ServiceError(e.code, e.message, { errors: e.errors, extra: e.extra, headers: e.headers })));
        }
        if (m.outOfMemory) return finish(true, outOfMemory);
        finish(true, () => reject(new ServiceError('internal', `text extraction failed: ${m.message ?? 'unknown error'}`)));
      };
      // Killed by the kernel or by V8 (heap limit), or an allocation that aborted: the memory ceiling.
      const onExit = () => finish(false, outOfMemory);
      const onAbort = () => finish(true, () => reject(new ServiceError('request_aborted', 'The client closed the request before the file was read; nothing was stored.')));
      child.on('message', onMessage);
      child.once('exit', onExit);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      child.send(job, (err) => err && finish(true, () => reject(new ServiceError('internal', `the extraction process did not take the file: ${err.message}`))));
    });
  }
}
