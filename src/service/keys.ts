import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ServiceError } from '../errors.ts';
import type { Storage } from '../storage/api.ts';
import type { Caller } from './caller.ts';

/** Secrets look like `vss_<43 base64url chars>`: 256 random bits, recognisable in leak scanners. */
export const KEY_PREFIX = 'vss_';
const MAX_KEY_LENGTH = 256;

export const newSecret = (): string => KEY_PREFIX + randomBytes(32).toString('base64url');

/**
 * Keys are random 256-bit secrets, so a fast hash is the right tool (a slow KDF protects
 * low-entropy passwords, which these are not). Only this hash is ever stored.
 */
export const hashKey = (secret: string): string => createHash('sha256').update(secret, 'utf8').digest('hex');

const UNAUTHENTICATED = (): ServiceError =>
  // One answer for missing, unknown, revoked and malformed keys: nothing to learn from the difference.
  new ServiceError('unauthenticated', 'A valid API key is required in the x-api-key header.');

export async function authenticate(storage: Storage, header: string | string[] | undefined): Promise<Caller> {
  if (typeof header !== 'string' || header.length === 0 || header.length > MAX_KEY_LENGTH) throw UNAUTHENTICATED();
  const hash = hashKey(header);
  const record = await storage.findApiKeyByHash(hash);
  if (record === null || record.revokedAt !== null) throw UNAUTHENTICATED();
  // The lookup is by hash already; the constant-time comparison keeps it so if a backend ever
  // matches loosely (prefix scans, case folding).
  if (!timingSafeEqual(Buffer.from(record.hash, 'hex'), Buffer.from(hash, 'hex'))) throw UNAUTHENTICATED();
  return { keyId: record.id, userId: record.userId, permissions: record.permissions, resources: record.resources };
}
