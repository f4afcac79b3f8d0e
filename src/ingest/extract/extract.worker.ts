/**
 * The extraction process's entry (started by pool.ts, one file at a time): detects the file's
 * type and extracts its text here, under the process's memory ceiling, so that a hostile file
 * can stall or exhaust only this process, never the server's event loop.
 */
import { ServiceError } from '../../errors.ts';
import { detectType } from '../detect.ts';
import { extractText } from './index.ts';
import { allocationFailed, OUT_OF_MEMORY } from './out-of-memory.ts';
import type { ExtractJob, ExtractReply } from './protocol.ts';

async function run(job: ExtractJob): Promise<ExtractReply> {
  const bytes = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
  try {
    const type = detectType(bytes, job.fileName);
    const extracted = await extractText(bytes, type, job.limits);
    return { id: job.id, ok: true, type, extracted };
  } catch (e) {
    if (e instanceof ServiceError && !allocationFailed(e)) {
      return { id: job.id, ok: false, error: { code: e.code, message: e.message, errors: e.errors, extra: e.extra, headers: e.headers } };
    }
    const message = e instanceof Error ? e.message : String(e);
    return { id: job.id, ok: false, outOfMemory: OUT_OF_MEMORY.test(message) || allocationFailed(e), message };
  }
}

process.on('message', (job: ExtractJob) => {
  void run(job).then((reply) => process.send!(reply));
});
process.send!({ ready: true });
