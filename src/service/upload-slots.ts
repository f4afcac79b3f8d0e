import { ServiceError } from '../errors.ts';

/**
 * Uploads in progress per user, in this process. An upload holds its file on disk and its text,
 * chunks and vectors in memory while it is embedded (minutes for a large file), and the plan's
 * request rate does not bound how many run at once: without a cap one user could start enough
 * of them to exhaust the process's memory or disk for every tenant. Claimed before the body is
 * read, so a refused upload costs nothing.
 */
export class UploadSlots {
  readonly #inFlight = new Map<string, number>();

  constructor(readonly perUser: number) {}

  /** Claims a slot for `userId`, or throws rate_limited; the returned function gives it back (once). */
  claim(userId: string): () => void {
    const n = this.#inFlight.get(userId) ?? 0;
    if (n >= this.perUser) {
      throw new ServiceError('rate_limited', `${n} uploads of yours are in progress; at most ${this.perUser} run at once. Retry when one has finished.`, {
        headers: { 'retry-after': '5' },
        extra: { limit: this.perUser },
      });
    }
    this.#inFlight.set(userId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#inFlight.get(userId) ?? 1) - 1;
      if (left <= 0) this.#inFlight.delete(userId);
      else this.#inFlight.set(userId, left);
    };
  }
}
