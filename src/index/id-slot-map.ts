/**
 * Row id → slot, in two typed arrays (open addressing, linear probing, backward-shift deletion).
 *
 * Why not a Map: a table's vector file keeps one entry per row, and a Map of 1M entries lives in
 * the V8 heap, where every major collection marks it, and is slow to fill at start. On the 1M
 * bench directory: a CPU profile of the start showed ~240 ms filling the Map against ~70 ms for
 * these arrays, the start's main-thread CPU went from 800–830 to 740–780 ms and its RssAnon down
 * by 15–24 MiB (bench/startup.bench.ts --data-dir), and the live heap while serving from ~76 to
 * ~49 MB (--trace-gc). These arrays sit outside the heap: 17–34 bytes a row.
 *
 * Row ids are non-negative integers up to 2^53 (SQLite row ids as JS numbers); slots are
 * non-negative int32s.
 */
const EMPTY = -1;
const MIN_CAPACITY = 16;
/** Grows to twice the capacity past this load. */
const MAX_LOAD = 0.7;

export class IdSlotMap {
  #keys: Float64Array;
  #slots: Int32Array;
  #mask: number;
  #size = 0;

  constructor(expected = 0) {
    const cap = capacityFor(expected);
    this.#keys = new Float64Array(cap);
    this.#slots = new Int32Array(cap).fill(EMPTY);
    this.#mask = cap - 1;
  }

  get size(): number {
    return this.#size;
  }

  get(id: number): number | undefined {
    const i = this.#find(id);
    return i < 0 ? undefined : this.#slots[i];
  }

  has(id: number): boolean {
    return this.#find(id) >= 0;
  }

  set(id: number, slot: number): void {
    const mask = this.#mask;
    let i = hash(id) & mask;
    for (;;) {
      if (this.#slots[i] === EMPTY) break;
      if (this.#keys[i] === id) {
        this.#slots[i] = slot;
        return;
      }
      i = (i + 1) & mask;
    }
    this.#keys[i] = id;
    this.#slots[i] = slot;
    if (++this.#size > this.#slots.length * MAX_LOAD) this.#grow();
  }

  delete(id: number): boolean {
    let i = this.#find(id);
    if (i < 0) return false;
    const mask = this.#mask;
    // Backward shift: pull later entries of the same probe run into the hole, so lookups never
    // stop early at it (no tombstones to clean up later).
    for (let j = (i + 1) & mask; this.#slots[j] !== EMPTY; j = (j + 1) & mask) {
      const home = hash(this.#keys[j]) & mask;
      // Entry j may move to i only if its home is not within (i, j] (cyclically).
      const stays = i <= j ? i < home && home <= j : i < home || home <= j;
      if (stays) continue;
      this.#keys[i] = this.#keys[j];
      this.#slots[i] = this.#slots[j];
      i = j;
    }
    this.#slots[i] = EMPTY;
    this.#size--;
    return true;
  }

  #find(id: number): number {
    const mask = this.#mask;
    for (let i = hash(id) & mask; ; i = (i + 1) & mask) {
      if (this.#slots[i] === EMPTY) return -1;
      if (this.#keys[i] === id) return i;
    }
  }

  #grow(): void {
    const keys = this.#keys;
    const slots = this.#slots;
    const cap = slots.length * 2;
    this.#keys = new Float64Array(cap);
    this.#slots = new Int32Array(cap).fill(EMPTY);
    this.#mask = cap - 1;
    this.#size = 0;
    for (let i = 0; i < slots.length; i++) if (slots[i] !== EMPTY) this.set(keys[i], slots[i]);
  }
}

function capacityFor(entries: number): number {
  let cap = MIN_CAPACITY;
  while (cap * MAX_LOAD < entries) cap *= 2;
  return cap;
}

/** Mixes both 32-bit halves of the id (murmur3's finaliser). */
function hash(id: number): number {
  let h = (id >>> 0) ^ Math.imul((id / 4294967296) >>> 0, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
