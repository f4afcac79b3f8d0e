/**
 * Length and SHA-256 of files, computed on a worker thread: checking a saved index or the model
 * reads hundreds of MB (~0.6 s a GB), and on the main thread that work would stall behind every
 * request (or stall them). Falls back to this thread if a worker cannot start.
 *
 * The same pass can also copy a file in large blocks (copyFileDigested): see there for why.
 */
import { createHash } from 'node:crypto';
import { runDigestTask, type DigestBlocks, type DigestTask, type FileDigest } from './file-digest-task.ts';
import type { DigestAnswer } from './file-digest.worker.ts';
import { startWorker } from './worker-url.ts';
import type { YieldSignal } from './yield-signal.ts';

export type { FileDigest };

/** Block size of reads, and of the copy's writes: a multiple of 2 MiB (see copyFileDigested). */
const BLOCK = 1 << 23;
/** The block while the foreground is busy: the least that still lands in a 2 MiB folio. */
const BUSY_BLOCK = 1 << 21;
/**
 * The rest before each BUSY_BLOCK while the foreground is busy: a block goes ahead once a whole
 * rest passed without a search starting (~5 ms of work: under a tenth of a core).
 */
const BUSY_REST_MS = 50;

const BLOCKS: DigestBlocks = { block: BLOCK, busyBlock: BUSY_BLOCK };

async function runTasks(tasks: DigestTask[]): Promise<(FileDigest | Error)[]> {
  if (tasks.length === 0) return [];
  let results: DigestAnswer[];
  try {
    results = await new Promise((resolve, reject) => {
      const worker = startWorker('platform/file-digest.worker', { workerData: { tasks, blocks: BLOCKS } });
      worker.once('message', (m) => {
        resolve(m);
        void worker.terminate();
      });
      worker.once('error', reject);
      worker.once('exit', () => reject(new Error('digest worker exited without an answer')));
    });
  } catch {
    // No thread to be had (the process is out of threads or memory): the same code here, which
    // holds the event loop while it reads. Rare, and a stall beats failing an index open or a seal.
    return tasks.map((t) => {
      try {
        return runDigestTask(t, BLOCKS, false);
      } catch (e) {
        return e as Error;
      }
    });
  }
  return results.map((r) => ('sha256' in r ? r : Object.assign(new Error(r.message), r.code ? { code: r.code } : {})));
}

/** Each file's digest, or the error that kept it from being read, in order. */
export const digestFiles = (files: string[]): Promise<(FileDigest | Error)[]> => runTasks(files.map((file) => ({ file })));

/** One file's digest; with `yieldTo`, unhurried while searches run (see copyFileDigested). */
export async function digestFile(file: string, opts: { yieldTo?: YieldSignal } = {}): Promise<FileDigest> {
  const [r] = await runTasks([task(file, undefined, opts)]);
  if (r instanceof Error) throw r;
  return r;
}

const task = (file: string, copyTo: string | undefined, opts: { yieldTo?: YieldSignal; restMs?: number }): DigestTask =>
  opts.yieldTo === undefined ? { file, copyTo } : { file, copyTo, yieldTo: opts.yieldTo.shared, seen: opts.yieldTo.searches, restMs: opts.restMs ?? BUSY_REST_MS };

/**
 * Copies `from` to `to` (which must not exist) in 8 MiB writes, fsyncs the copy and returns its
 * digest, in one pass on a worker thread. Why copy: a file written in small pieces sits in the
 * page cache in 4 KiB pages, while one written in large blocks gets 2 MiB folios (Linux ≥ 6.16
 * on ext4; XFS earlier), which a memory map then maps with one page-table entry per 2 MiB
 * ("FilePmdMapped" in /proc/<pid>/smaps). Random reads of a mapped graph then miss the TLB far
 * less: graph walks at 1M rows took ~20% less time (bench/vectors.bench.ts --n 1000000, which
 * reports the server's file mappings in 2 MiB pages beside the search latencies). Elsewhere the copy
 * is just a copy.
 *
 * `yieldTo`: whenever its search count moved since the last block (or since this call, for the
 * first), the copy rests `restMs` (default BUSY_REST_MS) at a time, counting each rest in the
 * signal, until a rest passes with no new search, and goes on in 2 MiB blocks. Past the signal's
 * patience (30 s unless the YieldSignal was made with another) it no longer waits for a gap,
 * one rest per block, so a stream of searches without gaps delays a copy but never stops it. Why:
 * - On two cores a search walks its graphs on both, and a third busy thread slows it whatever its
 *   priority (a spinning process at nice 19 or SCHED_IDLE alike put searches at 1M from p50
 *   5.4-6.4 to 6.6-7.6 ms). Copying a 250k-row graph flat out (250 MB, ~1 s) put the searches
 *   right after a bulk load at p50 6.5 ms against 3.9 once it was done.
 * - A 2 MiB write can hold a core for 5-7 ms in the kernel, out of reach of any priority: it
 *   writes into page-cache memory the kernel has just allocated, and where the machine is a VM
 *   that hands free memory back to its host (virtio-balloon free page reporting, as here) each
 *   fresh page first faults on the host (0.4 ms a write into reused memory). A kernel built
 *   without preemption (`Dynamic Preempt: none`, as here) lets a search thread woken on that core
 *   wait out the write: in the seconds after a 1M bulk load, five of the six slowest searches
 *   had waited ~6 ms for their second thread to start (bench/vectors.bench.ts --n 1000000, the
 *   searches timed right after its ingest).
 */
export async function copyFileDigested(from: string, to: string, opts: { yieldTo?: YieldSignal; restMs?: number } = {}): Promise<FileDigest> {
  const [r] = await runTasks([task(from, to, opts)]);
  if (r instanceof Error) throw r;
  return r;
}

export const digestBytes = (data: Uint8Array): FileDigest => ({ bytes: data.byteLength, sha256: createHash('sha256').update(data).digest('hex') });
