/**
 * Chat-model calls in flight in this process. Each holds a connection to the endpoint and a
 * request's passages for up to VSS_CHAT_TIMEOUT_MS, and a model server answers a few at a time at
 * best: without a bound, a burst of questions would queue there until every one of them timed
 * out. A question that finds every slot taken is answered extractively at once instead (chat.ts).
 */
export class LlmSlots {
  #inFlight = 0;

  constructor(readonly max: number) {}

  /** A slot's release (idempotent), or null when all `max` are taken. */
  tryClaim(): (() => void) | null {
    if (this.#inFlight >= this.max) return null;
    this.#inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight--;
    };
  }

  get inFlight(): number {
    return this.#inFlight;
  }
}
