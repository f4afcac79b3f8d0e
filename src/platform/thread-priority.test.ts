import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startWorker } from './worker-url.ts';

/** The nice value of a thread, from /proc/<pid>/task/<tid>/stat (field 19). */
const niceOf = (statPath: string): number => Number(fs.readFileSync(statPath, 'utf8').split(') ')[1].split(' ')[16]);

describe('background thread priority', { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  it('lowers the thread that runs it to nice 19 and leaves the others alone', async () => {
    const mainBefore = niceOf('/proc/thread-self/stat');
    const worker = startWorker('platform/thread-priority.test-worker');
    const seen = await new Promise<{ before: number; after: number }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    assert.equal(seen.before, mainBefore);
    assert.equal(seen.after, 19);
    assert.equal(niceOf('/proc/thread-self/stat'), mainBefore);
  });
});
