import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Deps } from './deps.ts';
import { hashKey, newSecret } from './keys.ts';

export const ADMIN_EMAIL = 'admin@localhost';
export const ADMIN_KEY_FILE = 'admin.key';

export interface BootstrapResult {
  /** Set only on the first start when the key was generated: the caller shows it once. */
  generatedKey?: string;
  keyFile?: string;
  adminUserId: string;
}

/**
 * First start: make the administrator (user and `All` key) and the default keyspace.
 * Later starts change nothing. The generated key is written to a file only its owner can read.
 */
export async function bootstrap({ config, storage, models }: Deps): Promise<BootstrapResult> {
  let admin = await storage.getUserByEmail(ADMIN_EMAIL);
  admin ??= await storage.createUser({ name: 'Administrator', email: ADMIN_EMAIL, plan: 'admin' });

  const result: BootstrapResult = { adminUserId: admin.id };
  if ((await storage.countApiKeys()) === 0) {
    const secret = config.adminKey ?? newSecret();
    await storage.createApiKey({ userId: admin.id, name: 'admin', hash: hashKey(secret), permissions: 'All', resources: ['*'] });
    if (config.adminKey === undefined) {
      await mkdir(config.dataDir, { recursive: true });
      const keyFile = path.join(config.dataDir, ADMIN_KEY_FILE);
      await writeFile(keyFile, `${secret}\n`, { mode: 0o600 });
      await chmod(keyFile, 0o600);
      result.generatedKey = secret;
      result.keyFile = keyFile;
    }
  }

  if ((await storage.getKeyspace(config.defaultKeyspace)) === null) {
    await storage.createKeyspace({ name: config.defaultKeyspace, owner: admin.id });
  }
  const table = await storage.getTable(config.defaultKeyspace, config.defaultTable);
  if (table === null) {
    await storage.createTable(
      { keyspace: config.defaultKeyspace, name: config.defaultTable, dimension: models.dimension(config.defaultModel), metric: 'cosine', model: config.defaultModel },
      { ifNotExists: true },
    );
  }
  return result;
}
