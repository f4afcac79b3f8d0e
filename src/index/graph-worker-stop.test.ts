import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

describe('GraphWorker start and stop', () => {
  it('can be closed at any moment of its start without aborting the process', async () => {
    // In a child process: the failure this guards against is a C++ abort ("terminate called after
    // throwing an instance of 'Napi::Error'"), which no test can catch. 400 cycles aborted the
    // code that stopped the thread while it was still loading usearch every time.
    const script = `
      import { GraphWorker } from ${JSON.stringify(path.join(import.meta.dirname, 'graph-worker.ts'))};
      for (let i = 0; i < 400; i++) {
        const w = new GraphWorker();
        await new Promise((r) => setTimeout(r, (i * 7) % 31));
        await w.close();
      }
      console.log('closed 400');`;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 180_000 });
    assert.match(stdout, /closed 400/);
  });
});
