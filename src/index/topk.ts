/**
 * Keeps the best `limit` items seen, in O(n log limit): a binary heap whose root is the worst
 * item kept. `cmp` sorts best first (negative when `a` is better).
 */
export class TopK<T> {
  readonly #heap: T[] = [];
  readonly #limit: number;
  readonly #cmp: (a: T, b: T) => number;

  constructor(limit: number, cmp: (a: T, b: T) => number) {
    this.#limit = Math.max(0, limit);
    this.#cmp = cmp;
  }

  get size(): number {
    return this.#heap.length;
  }

  push(item: T): void {
    const h = this.#heap;
    if (h.length < this.#limit) {
      h.push(item);
      this.#up(h.length - 1);
    } else if (h.length > 0 && this.#cmp(item, h[0]) < 0) {
      h[0] = item;
      this.#down(0);
    }
  }

  /** The kept items, best first. */
  sorted(): T[] {
    return [...this.#heap].sort(this.#cmp);
  }

  // Heap order: a parent is worse than (sorts after) its children.
  #up(i: number): void {
    const h = this.#heap;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.#cmp(h[i], h[p]) <= 0) return;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }

  #down(i: number): void {
    const h = this.#heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let w = i;
      if (l < h.length && this.#cmp(h[l], h[w]) > 0) w = l;
      if (r < h.length && this.#cmp(h[r], h[w]) > 0) w = r;
      if (w === i) return;
      [h[i], h[w]] = [h[w], h[i]];
      i = w;
    }
  }
}
