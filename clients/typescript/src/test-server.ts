/** For this package's tests: the real server (test/server.ts) over a fresh temporary data directory. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startServer, type RunningServer } from '../../../test/server.ts';

export interface TempServer {
  server: RunningServer;
  /** A temporary directory of the test's own (the data directory is inside it). */
  dir: string;
  stop(): Promise<void>;
}

export async function startTempServer(name: string, adminKey: string): Promise<TempServer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `vss-${name}-`));
  const server = await startServer({ VSS_DATA_DIR: path.join(dir, 'data'), VSS_ADMIN_KEY: adminKey });
  return {
    server,
    dir,
    async stop() {
      await server.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}
