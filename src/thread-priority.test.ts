import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { Worker } from 'node:worker_threads';
import { LOWEST_PRIORITY_JS } from './thread-priority.ts';

/** The nice value of a thread, from /proc/<pid>/task/<tid>/stat (field 19). */
const niceOf = (statPath: string): number => Number(fs.readFileSync(statPath, 'utf8').split(') ')[1].split(' ')[16]);

describe('background thread priority', { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  it('lowers the thread that runs it to nice 19 and leaves the others alone', async () => {
    const mainBefore = niceOf('/proc/thread-self/stat');
    const source = `
      const { parentPort } = require('node:worker_threads');
      const nice = () => Number(require('node:fs').readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' ')[16]);
      const before = nice();
      ${LOWEST_PRIORITY_JS}
      parentPort.postMessage({ before, after: nice() });`;
    const worker = new Worker(source, { eval: true });
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
