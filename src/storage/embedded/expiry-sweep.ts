/**
 * The background removal of expired rows and metadata records (TTL). Reads stop returning a row
 * the moment it expires (expiry.ts); this reclaims the space, in batches of at most `batchRows`
 * deletions, each one short transaction, with a turn of the event loop between batches so that
 * searches and writes arriving meanwhile run between them rather than after a million deletions.
 * Each pass first takes the expired rows out of the ANN graphs (far cheaper per row than deleting
 * them), so that searches stop walking past them long before the deletions end.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

export interface SweepSettings {
  /** Most rows (or records) one batch deletes. */
  batchRows: number;
  /** How often a pass starts, in ms. */
  intervalMs: number;
}

/** A step deletes at most `max` expired items and says how many it deleted. */
export type SweepStep = (max: number) => number;

export interface SweepSteps {
  /** Takes at most `max` expired rows out of the indexes (not counted as removed); runs first. */
  unindex?: SweepStep;
  remove: SweepStep[];
}

/** Rows an unindex batch takes, per row a removal batch deletes: each costs microseconds, not tens. */
const UNINDEX_PER_REMOVAL = 10;

export class ExpirySweep {
  readonly #settings: SweepSettings;
  readonly #steps: SweepSteps;
  readonly #log?: (msg: string, err?: unknown) => void;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<number> | null = null;
  #stopped = false;

  constructor(settings: SweepSettings, steps: SweepSteps, log?: (msg: string, err?: unknown) => void) {
    this.#settings = settings;
    this.#steps = steps;
    this.#log = log;
  }

  start(): void {
    if (this.#timer !== null || this.#stopped) return;
    this.#timer = setInterval(() => void this.run().catch((e) => this.#log?.('expiry sweep failed', e)), this.#settings.intervalMs);
    this.#timer.unref();
  }

  /** One pass: batches until nothing expired is left (or the store closes); joins a pass under way. Answers how many items went. */
  run(): Promise<number> {
    this.#running ??= this.#pass().finally(() => (this.#running = null));
    return this.#running;
  }

  async #pass(): Promise<number> {
    const { unindex, remove } = this.#steps;
    const unindexBatch = this.#settings.batchRows * UNINDEX_PER_REMOVAL;
    if (unindex !== undefined) await this.#drain(unindex, unindexBatch);
    // Rows expiring while a long pass deletes also leave the graphs at once, a batch a turn.
    const between = unindex !== undefined ? () => void unindex(unindexBatch) : undefined;
    let total = 0;
    for (const step of remove) total += await this.#drain(step, this.#settings.batchRows, between);
    return total;
  }

  /**
   * Runs `step` in batches of `batch` (each after `before`, if given) until one comes back short
   * (or the store closes); answers the items it took.
   */
  async #drain(step: SweepStep, batch: number, before?: () => void): Promise<number> {
    let total = 0;
    while (!this.#stopped) {
      before?.();
      const n = step(batch);
      total += n;
      if (n < batch) break;
      await nextTurn();
    }
    await nextTurn();
    return total;
  }

  /** Stops the timer and waits for a pass under way to end its current batch. */
  async close(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running?.catch(() => undefined);
  }
}
