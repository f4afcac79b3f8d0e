import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

describe('AnnIndex under churn', () => {
  it('keeps taking removes and adds of new keys (usearch 2.25 spun for ever in remove after ~190)', async () => {
    // In a child process with a timeout: the failure is a thread spinning inside usearch, which
    // no test in this process could interrupt. A table whose rows are replaced one at a time
    // (write a new key, delete the old) hung its server this way in a randomized contract run.
    const script = `
      import { AnnIndex } from ${JSON.stringify(path.join(import.meta.dirname, 'ann.ts'))};
      const index = AnnIndex.create(4, 'euclidean');
      const v = Float32Array.of(1, 2, 3, 4);
      index.add([0], v);
      for (let i = 0; i < 2000; i++) {
        index.remove([i]);
        index.add([i + 1], v);
      }
      console.log('size ' + index.size);`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 60_000 });
    assert.match(stdout, /size 1\b/);
  });
});
