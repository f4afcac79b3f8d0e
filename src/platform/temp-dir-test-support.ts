import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';

/**
 * A fresh directory under the system's temp folder for the tests of the calling describe block:
 * made before its first test, removed with all it holds after its last. Call it inside describe();
 * the returned function gives the directory's path once the tests run.
 */
export function tempDirForSuite(prefix: string): () => string {
  let dir = '';
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  });
  after(() => fs.rm(dir, { recursive: true, force: true }));
  return () => dir;
}
