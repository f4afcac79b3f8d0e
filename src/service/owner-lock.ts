/**
 * Quota checks and the writes they allow, run one at a time per owner. A check and its write are
 * apart (an upload embeds for seconds in between), so two concurrent writes could each pass a
 * check that only one of them fits. Within one process the second now waits for the first and
 * checks again; across service processes (Cassandra) a plan can still be overrun by what is in
 * flight at once.
 */
import type { Storage } from '../storage/api.ts';

const tails = new WeakMap<Storage, Map<string, Promise<unknown>>>();

/** Runs `fn` after every earlier call for the same owner (and storage) has settled. */
export async function forOwner<T>(storage: Storage, owner: string | null, fn: () => Promise<T>): Promise<T> {
  if (owner === null) return fn(); // no owner, no quota
  let byOwner = tails.get(storage);
  if (!byOwner) tails.set(storage, (byOwner = new Map()));
  const before = byOwner.get(owner) ?? Promise.resolve();
  const run = before.then(fn, fn);
  const tail = run.catch(() => undefined);
  byOwner.set(owner, tail);
  try {
    return await run;
  } finally {
    if (byOwner.get(owner) === tail) byOwner.delete(owner);
  }
}
