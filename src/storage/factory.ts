import path from 'node:path';
import type { Config } from '../config/config.ts';
import { describeTightened, makePrivateDir } from '../platform/private-dir.ts';
import type { Storage } from './api.ts';
import { openEmbeddedStorage } from './embedded/embedded-storage.ts';

/** What the storage layer reports while it works (an index rebuilt, a helper thread gone). */
export interface StorageHooks {
  log?: (msg: string, err?: unknown) => void;
}

/** Config chooses the backend; nothing else in the code base names one. */
export async function openStorage(config: Config, hooks: StorageHooks = {}): Promise<Storage> {
  // Both backends keep files there (uploads in flight, admin.key; the embedded one everything).
  const tightened = describeTightened(path.resolve(config.dataDir), await makePrivateDir(config.dataDir));
  if (tightened !== null) hooks.log?.(tightened);
  switch (config.storage) {
    case 'embedded':
      return openEmbeddedStorage({
        log: hooks.log,
        dataDir: config.dataDir,
        index: config.index,
        vectorMemoryBytes: config.vectorMemoryMb * 2 ** 20,
        mmapBytes: config.dbMmapMb * 2 ** 20,
        ttlSweep: config.ttlSweep,
      });
    case 'cassandra': {
      // Loaded only for this backend: cassandra-driver is heavy and the embedded backend never needs it.
      const { openCassandraStorage } = await import('./cassandra/cassandra-storage.ts');
      return openCassandraStorage({
        contactPoints: [...config.cassandra.contactPoints],
        localDc: config.cassandra.localDc,
        replication: config.cassandra.replication,
        exactScanMaxRows: config.index.exactBelowRows,
        writeConsistency: config.cassandra.writeConsistency,
        systemKeyspace: config.cassandra.systemKeyspace,
        keyspacePrefix: config.cassandra.keyspacePrefix,
        apiKeyCacheMs: config.cassandra.apiKeyCacheMs,
        secureConnectBundle: config.cassandra.secureConnectBundle,
        credentials: config.cassandra.credentials,
      });
    }
  }
}
