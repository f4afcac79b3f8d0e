/**
 * Length and SHA-256 of files, computed on a worker thread: checking a saved index or the model
 * reads hundreds of MB (~0.6 s a GB), and on the main thread that work would stall behind every
 * request (or stall them). Falls back to this thread if a worker cannot start.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Worker } from 'node:worker_threads';

export interface FileDigest {
  bytes: number;
  sha256: string;
}

/** Plain JS, so it runs as is under tsx and inside the bundle alike. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { createReadStream } = require('node:fs');
const digest = (file) => new Promise((resolve, reject) => {
  const hash = createHash('sha256');
  let bytes = 0;
  const s = createReadStream(file, { highWaterMark: 1 << 22 });
  s.on('data', (chunk) => { hash.update(chunk); bytes += chunk.length; });
  s.on('error', reject);
  s.on('end', () => resolve({ bytes, sha256: hash.digest('hex') }));
});
Promise.all(workerData.map((file) => digest(file).catch((e) => ({ message: String(e && e.message), code: e && e.code }))))
  .then((results) => parentPort.postMessage(results));
`;

/** Each file's digest, or the error that kept it from being read, in order. */
export async function digestFiles(files: string[]): Promise<(FileDigest | Error)[]> {
  if (files.length === 0) return [];
  let results: (FileDigest | { message: string; code?: string })[];
  try {
    results = await new Promise((resolve, reject) => {
      const worker = new Worker(WORKER, { eval: true, workerData: files, execArgv: [] });
      worker.once('message', (m) => {
        resolve(m);
        void worker.terminate();
      });
      worker.once('error', reject);
      worker.once('exit', () => reject(new Error('digest worker exited without an answer')));
    });
  } catch {
    return Promise.all(files.map((f) => digestInThread(f).catch((e: unknown) => e as Error)));
  }
  return results.map((r) => ('sha256' in r ? r : Object.assign(new Error(r.message), r.code ? { code: r.code } : {})));
}

export async function digestFile(file: string): Promise<FileDigest> {
  const [r] = await digestFiles([file]);
  if (r instanceof Error) throw r;
  return r;
}

export const digestBytes = (data: Uint8Array): FileDigest => ({ bytes: data.byteLength, sha256: createHash('sha256').update(data).digest('hex') });

async function digestInThread(file: string): Promise<FileDigest> {
  const h = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 22 })) {
    h.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { bytes, sha256: h.digest('hex') };
}
