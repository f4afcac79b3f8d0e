/**
 * The digest (and copy) of one file with synchronous calls: the work of file-digest.ts, run on its
 * worker thread (file-digest.worker.ts) or, as the fallback, on the calling thread.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { YieldSignal } from './yield-signal.ts';

export interface FileDigest {
  bytes: number;
  sha256: string;
}

/**
 * One file to digest, and where to copy it to on the way (a new file, fsynced) if anywhere.
 * `yieldTo` (a YieldSignal's shared counters): while its search count moves (from `seen`, its
 * value when the task was asked for), the pass waits for gaps in the searches and goes a small
 * block at a time (see copyFileDigested).
 */
export interface DigestTask {
  file: string;
  copyTo?: string;
  yieldTo?: Int32Array;
  seen?: number;
  restMs?: number;
}

/** Block sizes: `block` for reads and writes, `busyBlock` while searches run (see file-digest.ts). */
export interface DigestBlocks {
  block: number;
  busyBlock: number;
}

/** Digests (and copies) `task.file`; rests for searches only where `canRest` (a worker thread). */
export function runDigestTask(task: DigestTask, { block, busyBlock }: DigestBlocks, canRest: boolean): FileDigest {
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(block);
  const src = fs.openSync(task.file, 'r');
  const busy = canRest && task.yieldTo !== undefined ? new YieldSignal(task.yieldTo) : null;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  let seen = task.seen;
  let dst = -1;
  try {
    if (task.copyTo !== undefined) dst = fs.openSync(task.copyTo, 'wx', 0o600);
    const patientUntil = busy ? Date.now() + busy.gapPatienceMs : 0;
    let bytes = 0;
    let size = block;
    for (;;) {
      if (busy && busy.searches !== seen) {
        size = busyBlock;
        // Rest until a whole rest passes with no search starting, or the patience runs out.
        do {
          seen = busy.searches;
          busy.restTaken();
          Atomics.wait(pause, 0, 0, task.restMs);
        } while (busy.searches !== seen && Date.now() < patientUntil);
      }
      const n = fs.readSync(src, buf, 0, size, bytes);
      if (n === 0) break;
      hash.update(buf.subarray(0, n));
      if (dst >= 0) for (let w = 0; w < n; ) w += fs.writeSync(dst, buf, w, n - w, bytes + w);
      bytes += n;
    }
    if (dst >= 0) fs.fsyncSync(dst);
    return { bytes, sha256: hash.digest('hex') };
  } finally {
    fs.closeSync(src);
    if (dst >= 0) fs.closeSync(dst);
  }
}
