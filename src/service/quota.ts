import type { Config, PlanLimits } from '../config/config.ts';
import { ServiceError } from '../errors.ts';
import type { User } from '../storage/api.ts';
import type { Deps } from './deps.ts';

export function planOf(config: Pick<Config, 'plans'>, user: Pick<User, 'plan'>): PlanLimits {
  return config.plans[user.plan] ?? config.plans.free;
}

/**
 * Refuses a write that would take the keyspace owner's stored vectors past their plan.
 * The owner pays, whoever writes. `adding` is an upper bound (every row new); near the limit,
 * `countNew` says how many rows the write really adds, so that rewriting a stored key (an
 * upsert, or a retry) is never refused.
 */
export async function checkVectorQuota(deps: Deps, owner: string | null, adding: number, countNew?: () => Promise<number>): Promise<void> {
  if (owner === null) return;
  const user = await deps.storage.getUser(owner);
  if (user === null) return;
  const plan = planOf(deps.config, user);
  if (plan.maxVectors >= Number.MAX_SAFE_INTEGER) return;
  const { vectors } = await deps.storage.usageOf(owner);
  if (vectors + adding <= plan.maxVectors) return;
  if (countNew) adding = await countNew();
  if (vectors + adding > plan.maxVectors) {
    throw new ServiceError(
      'quota_exceeded',
      `The ${user.plan} plan stores at most ${plan.maxVectors} vectors; ${vectors} are stored and this write adds ${adding}. Upgrade the plan or delete vectors.`,
      { extra: { plan: user.plan, limit: plan.maxVectors, used: vectors } },
    );
  }
}

/**
 * Whether a write to `owner`'s keyspace has a vector quota to check: its writes must then take turns
 * (owner-lock.ts) so that two of them cannot both pass a check only one fits.
 */
export async function limitsVectors(deps: Deps, owner: string | null): Promise<boolean> {
  if (owner === null) return false;
  const user = await deps.storage.getUser(owner);
  return user !== null && planOf(deps.config, user).maxVectors < Number.MAX_SAFE_INTEGER;
}

/** Refuses a new keyspace past the owner's plan. */
export async function checkKeyspaceQuota(deps: Deps, owner: string): Promise<void> {
  const user = await deps.storage.getUser(owner);
  if (user === null) return;
  const plan = planOf(deps.config, user);
  if (plan.maxKeyspaces >= Number.MAX_SAFE_INTEGER) return;
  const owned = (await deps.storage.listKeyspaces(owner)).length;
  if (owned >= plan.maxKeyspaces) {
    throw new ServiceError('quota_exceeded', `The ${user.plan} plan holds at most ${plan.maxKeyspaces} keyspaces; ${owned} exist. Upgrade the plan or use the ones there are.`, {
      extra: { plan: user.plan, limit: plan.maxKeyspaces, used: owned },
    });
  }
}

/** Refuses a new table in a keyspace that holds the most tables allowed (every plan alike). */
export async function checkTableQuota(deps: Deps, keyspace: string): Promise<void> {
  const limit = deps.config.limits.tablesPerKeyspace;
  const held = (await deps.storage.listTables(keyspace)).length;
  if (held >= limit) {
    throw new ServiceError('quota_exceeded', `Keyspace "${keyspace}" holds at most ${limit} tables; it has ${held}.`, { extra: { limit, used: held } });
  }
}

export async function checkFileQuota(deps: Deps, owner: string | null, addingBytes: number): Promise<void> {
  if (owner === null) return;
  const user = await deps.storage.getUser(owner);
  if (user === null) return;
  const plan = planOf(deps.config, user);
  const { fileBytes } = await deps.storage.usageOf(owner);
  if (fileBytes + addingBytes > plan.maxFileBytes) {
    throw new ServiceError(
      'quota_exceeded',
      `The ${user.plan} plan stores at most ${plan.maxFileBytes} bytes of files; ${fileBytes} are stored and this upload adds ${addingBytes}.`,
      { extra: { plan: user.plan, limit: plan.maxFileBytes, used: fileBytes } },
    );
  }
}
