import type { Config } from '../config/config.ts';
import { ServiceError } from '../errors.ts';
import type { Storage } from './api.ts';
import { openEmbeddedStorage } from './embedded/embedded-storage.ts';

/** Config chooses the backend; nothing else in the code base names one. */
export async function openStorage(config: Config): Promise<Storage> {
  switch (config.storage) {
    case 'embedded':
      return openEmbeddedStorage({ dataDir: config.dataDir, index: config.index });
    case 'cassandra':
      throw new ServiceError('storage_unavailable', 'The cassandra backend is not part of this build yet.');
  }
}
