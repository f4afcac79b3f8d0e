import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { removeDeadTemps, writeFileDurably } from '../platform/durable-file.ts';
import { DIR_MODE, FILE_MODE } from '../platform/private-dir.ts';
import type { Deps } from './deps.ts';
import { hashKey, newSecret } from './keys.ts';
import { isServiceError } from '../errors.ts';

const alreadyExists = (err: unknown): boolean => isServiceError(err) && err.code === 'already_exists';

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
  // Several processes may start at once on one shared store (Cassandra): whichever creates a
  // piece first wins, and the others take it (already_exists) instead of failing to start.
  let admin = await storage.getUserByEmail(ADMIN_EMAIL);
  admin ??= await storage.createUser({ name: 'Administrator', email: ADMIN_EMAIL, plan: 'admin' }).catch(async (err: unknown) => {
    if (!alreadyExists(err)) throw err;
    // The other process claimed the e-mail; its user row may land a moment later.
    for (let i = 0; i < 50; i++) {
      const existing = await storage.getUserByEmail(ADMIN_EMAIL);
      if (existing) return existing;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw err;
  });

  const result: BootstrapResult = { adminUserId: admin.id };
  if ((await storage.countApiKeys()) === 0) {
    const secret = config.adminKey ?? newSecret();
    let keyFile: string | undefined;
    if (config.adminKey === undefined) {
      // The file first, whole (temp, fsync, rename), and the key's hash after it: a start killed
      // in between leaves no key stored, so the next start makes a new one and replaces the file.
      // The other way round, a kill after the commit left the only working key unwritten (an
      // empty file, nothing printed) and every later start saw a key stored: locked out for good.
      await mkdir(config.dataDir, { recursive: true, mode: DIR_MODE });
      removeDeadTemps(config.dataDir);
      keyFile = path.join(config.dataDir, ADMIN_KEY_FILE);
      await writeFileDurably(keyFile, `${secret}\n`, { mode: FILE_MODE });
    }
    const made = await storage
      .createApiKey({ userId: admin.id, name: 'admin', hash: hashKey(secret), permissions: 'All', resources: ['*'] })
      .then(
        () => true,
        (err: unknown) => {
          // The same VSS_ADMIN_KEY, stored a moment ago by another process.
          if (config.adminKey !== undefined && alreadyExists(err)) return false;
          throw err;
        },
      );
    if (made && keyFile !== undefined) {
      result.generatedKey = secret;
      result.keyFile = keyFile;
    }
  }

  if ((await storage.getKeyspace(config.defaultKeyspace)) === null) {
    await storage.createKeyspace({ name: config.defaultKeyspace, owner: admin.id }).catch((err: unknown) => {
      if (!alreadyExists(err)) throw err;
    });
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
