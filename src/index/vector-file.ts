/**
 * A table's full-precision vectors in a flat file (slot i at byte i * dimension * 4), read and
 * written with positioned I/O, so they live in the OS page cache rather than in the process's
 * anonymous memory and need no reload at start. Node has no mmap, and the mmap addons do not
 * build on current Node; a 1M x 384 table (1.5 GB) reads back from the page cache in ~150 ms,
 * and a re-scoring pass reads ~100 rows at a few microseconds each.
 *
 * Only the slot bookkeeping is in memory: slot -> row id (8 bytes a row) and row id -> slot.
 * Slots stay dense (a delete moves the last row into the hole), so a scan reads one contiguous
 * range. Tables small enough for a shared memory budget also keep a copy in memory (blocks of
 * SCAN_ROWS rows, each at offset 0 of its own buffer as usearch needs), so their scans copy
 * nothing; a table that outgrows the budget drops its copy. The file is derived state: the database is the truth. `save` (at a clean close) makes
 * it durable with the change sequence it reflects; `openSaved` trusts it only when that sequence
 * is still the database's, and otherwise the caller refills it from the database.
 */
import fs from 'node:fs';
import { writeFileDurably } from '../platform/durable-file.ts';
import { FILE_MODE } from '../platform/private-dir.ts';
import type { VectorBlock, VectorMatrix } from './matrix.ts';
import { IdSlotMap } from './id-slot-map.ts';

const FORMAT = 'vss-vectors-f32-1';
/** Rows per read when scanning: 8,192 x 384 x 4 bytes = 12.6 MB of scratch. */
export const SCAN_ROWS = 8_192;

/** A cap, shared by every matrix, on the bytes of vectors kept in memory beside their files. */
export class MemoryBudget {
  readonly limit: number;
  #free: number;
  constructor(bytes: number) {
    this.limit = bytes;
    this.#free = bytes;
  }
  take(bytes: number): boolean {
    if (bytes > this.#free) return false;
    this.#free -= bytes;
    return true;
  }
  give(bytes: number): void {
    this.#free += bytes;
  }
}

const NO_BUDGET = new MemoryBudget(0);
/** A memory copy's last block starts this small and doubles up to SCAN_ROWS. */
const FIRST_BLOCK_ROWS = 64;

interface Sidecar {
  format: string;
  seq: number;
  size: number;
  dimension: number;
  tag: string;
}

export const idsPath = (file: string): string => `${file}.ids`;
export const sidecarPathOf = (file: string): string => `${file}.json`;

export class FileMatrix implements VectorMatrix {
  readonly dimension: number;
  readonly file: string;
  readonly #rowBytes: number;
  #fd: number;
  /** slot -> row id; only [0, size) is meaningful. */
  #ids: Float64Array;
  readonly #slotOf: IdSlotMap;
  #size = 0;
  /** Rows the file has space written for (its length in rows, as far as this object knows). */
  #spaceRows: number;
  /** Reused by scans, which run to completion synchronously; a nested scan allocates its own. */
  #scratch: Float32Array | null = null;
  #scratchBusy = false;
  /** The in-memory copy (null once the budget could not hold it), and the bytes it took. */
  #blocks: Float32Array[] | null = [];
  #blockBytes = 0;
  readonly #budget: MemoryBudget;

  private constructor(file: string, dimension: number, fd: number, ids: Float64Array, size: number, budget: MemoryBudget) {
    this.file = file;
    this.dimension = dimension;
    this.#rowBytes = dimension * 4;
    this.#fd = fd;
    this.#ids = ids;
    this.#size = size;
    this.#spaceRows = Math.floor(fs.fstatSync(fd).size / this.#rowBytes);
    this.#budget = budget;
    if (budget.limit === 0) this.#blocks = null;
    this.#slotOf = new IdSlotMap(size);
    for (let s = 0; s < size; s++) this.#slotOf.set(ids[s], s);
    if (this.#ensureCopy(size) && size > 0) {
      for (let s = 0; s < size; s += SCAN_ROWS) this.#readFile(this.#blocks![s / SCAN_ROWS], s, Math.min(SCAN_ROWS, size - s));
    }
  }

  /** A new, empty matrix in `file` (any previous content and sidecar are discarded). */
  static create(file: string, dimension: number, budget = NO_BUDGET): FileMatrix {
    if (!Number.isInteger(dimension) || dimension < 1) throw new RangeError(`bad dimension ${dimension}`);
    fs.rmSync(sidecarPathOf(file), { force: true });
    fs.rmSync(idsPath(file), { force: true });
    const fd = fs.openSync(file, 'w+', FILE_MODE);
    return new FileMatrix(file, dimension, fd, new Float64Array(1024), 0, budget);
  }

  /** Whether rows are scanned from memory rather than from the file. */
  get inMemory(): boolean {
    return this.#blocks !== null;
  }

  /**
   * The matrix saved in `file`, or null unless its sidecar says it reflects exactly `seq` of the
   * database `tag` and its files have the lengths that implies.
   */
  static openSaved(file: string, dimension: number, expect: { seq: number; tag: string }, budget = NO_BUDGET): FileMatrix | null {
    let side: Sidecar;
    let ids: Buffer;
    try {
      side = JSON.parse(fs.readFileSync(sidecarPathOf(file), 'utf8')) as Sidecar;
      if (
        side?.format !== FORMAT ||
        side.dimension !== dimension ||
        side.tag !== expect.tag ||
        side.seq !== expect.seq ||
        !Number.isSafeInteger(side.size) ||
        side.size < 0
      ) {
        return null;
      }
      if (fs.statSync(file).size < side.size * dimension * 4) return null;
      ids = fs.readFileSync(idsPath(file));
      if (ids.byteLength !== side.size * 8) return null;
    } catch {
      return null;
    }
    const arr = new Float64Array(Math.max(1024, side.size));
    arr.set(new Float64Array(ids.buffer, ids.byteOffset, side.size));
    const m = new FileMatrix(file, dimension, fs.openSync(file, 'r+'), arr, side.size, budget);
    // A duplicate row id means the ids file is not what save() wrote.
    if (m.#slotOf.size !== side.size) {
      m.close();
      return null;
    }
    return m;
  }

  get size(): number {
    return this.#size;
  }

  has(rowId: number): boolean {
    return this.#slotOf.has(rowId);
  }

  /** A copy of the row's vector. */
  get(rowId: number): Float32Array | undefined {
    const slot = this.#slotOf.get(rowId);
    if (slot === undefined) return undefined;
    const v = new Float32Array(this.dimension);
    this.#read(v, slot, 1);
    return v;
  }

  /** A view into the memory copy (no copy, no read), or null when the table has none. */
  residentView(rowId: number): Float32Array | undefined | null {
    const blocks = this.#blocks;
    if (blocks === null) return null;
    const slot = this.#slotOf.get(rowId);
    if (slot === undefined) return undefined;
    const off = (slot % SCAN_ROWS) * this.dimension;
    return blocks[(slot - (slot % SCAN_ROWS)) / SCAN_ROWS].subarray(off, off + this.dimension);
  }

  set(rowId: number, vector: ArrayLike<number>): void {
    this.setMany([rowId], [vector]);
  }

  /**
   * Makes sure the file has space for `rows` rows past the live ones by writing zeros there now.
   * A writer calls it inside its database transaction, so that a full disk fails the write whole
   * (nothing committed) instead of failing the vector file's write after the commit, which left
   * committed rows without vectors.
   */
  reserve(rows: number): void {
    const target = this.#size + rows;
    if (target <= this.#spaceRows) return;
    const zeros = new Uint8Array((target - this.#spaceRows) * this.#rowBytes);
    const at = this.#spaceRows * this.#rowBytes;
    let done = 0;
    while (done < zeros.length) done += fs.writeSync(this.#fd, zeros, done, zeros.length - done, at + done);
    this.#spaceRows = target;
  }

  /** Inserts or overwrites rows; new rows take consecutive slots and are written in one call. */
  setMany(rowIds: ArrayLike<number>, vectors: ArrayLike<ArrayLike<number>>): void {
    const d = this.dimension;
    const fresh: number[] = [];
    for (let i = 0; i < rowIds.length; i++) {
      const v = vectors[i];
      if (v.length !== d) throw new RangeError(`vector has ${v.length} values, matrix has dimension ${d}`);
      const slot = this.#slotOf.get(rowIds[i]);
      if (slot === undefined) fresh.push(i);
      else this.#write(toF32(v), slot);
    }
    if (fresh.length === 0) return;
    const first = this.#size;
    this.#ensureIds(first + fresh.length);
    this.#ensureCopy(first + fresh.length);
    // Each vector goes where its slot is: the same new row twice in one call keeps the slot of
    // the first (the later vector wins), so later rows' slots and batch positions differ.
    const buf = new Float32Array(fresh.length * d);
    for (const i of fresh) {
      const rowId = rowIds[i];
      let slot = this.#slotOf.get(rowId);
      if (slot === undefined) {
        slot = this.#size++;
        this.#ids[slot] = rowId;
        this.#slotOf.set(rowId, slot);
      }
      buf.set(vectors[i], (slot - first) * d);
    }
    this.#write(buf.subarray(0, (this.#size - first) * d), first);
  }

  /** Removes the row; the last row moves into its slot. */
  delete(rowId: number): boolean {
    const slot = this.#slotOf.get(rowId);
    if (slot === undefined) return false;
    this.#slotOf.delete(rowId);
    const last = this.#size - 1;
    if (slot !== last) {
      const moved = new Float32Array(this.dimension);
      this.#read(moved, last, 1);
      this.#write(moved, slot);
      const movedId = this.#ids[last];
      this.#ids[slot] = movedId;
      this.#slotOf.set(movedId, slot);
    }
    this.#size = last;
    return true;
  }

  /** The live rows in blocks of SCAN_ROWS; each block is valid only until the next is taken. */
  *segments(): IterableIterator<VectorBlock> {
    const d = this.dimension;
    const own = this.#scratchBusy;
    const scratch = own ? new Float32Array(SCAN_ROWS * d) : (this.#scratch ??= new Float32Array(SCAN_ROWS * d));
    if (!own) this.#scratchBusy = true;
    try {
      for (let s = 0; s < this.#size; s += SCAN_ROWS) {
        const n = Math.min(SCAN_ROWS, this.#size - s);
        const block = this.#blocks?.[s / SCAN_ROWS];
        if (block) {
          yield { vectors: new Float32Array(block.buffer, 0, n * d), rowIds: this.#ids.subarray(s, s + n) };
          continue;
        }
        this.#read(scratch, s, n);
        yield { vectors: n === SCAN_ROWS ? scratch : new Float32Array(scratch.buffer, 0, n * d), rowIds: this.#ids.subarray(s, s + n) };
      }
    } finally {
      if (!own) this.#scratchBusy = false;
    }
  }

  rowIdAt(position: number): number | undefined {
    return position >= 0 && position < this.#size ? this.#ids[position] : undefined;
  }

  /**
   * The given rows (absent ones skipped) in packed blocks of at most `blockRows`. Few rows are
   * read one run of adjacent slots at a time; many are picked out of one sequential scan.
   */
  *gather(rowIds: Iterable<number>, blockRows = 4_096): IterableIterator<VectorBlock> {
    const slots: number[] = [];
    for (const id of rowIds) {
      const s = this.#slotOf.get(id);
      if (s !== undefined) slots.push(s);
    }
    if (slots.length === 0) return;
    const d = this.dimension;
    slots.sort((a, b) => a - b);
    const out = new BlockWriter(d, Math.min(blockRows, slots.length));
    if (slots.length > this.#size / 16) {
      // Picking rows out of a full scan beats thousands of small reads.
      let i = 0;
      for (const { vectors, rowIds: ids } of this.segments()) {
        const base = this.#slotOf.get(ids[0])!;
        while (i < slots.length && slots[i] < base + ids.length) {
          if (i > 0 && slots[i] === slots[i - 1]) { i++; continue; }
          const off = slots[i] - base;
          const full = out.push(vectors.subarray(off * d, off * d + d), ids[off]);
          if (full) yield full;
          i++;
        }
      }
    } else {
      const run = new Float32Array(Math.min(256, slots.length) * d);
      const runRows = run.length / d;
      for (let i = 0; i < slots.length; ) {
        let j = i + 1;
        while (j < slots.length && j - i < runRows && slots[j] <= slots[j - 1] + 1) j++;
        const start = slots[i];
        const count = slots[j - 1] - start + 1;
        this.#read(run, start, count);
        for (let k = i; k < j; k++) {
          if (k > i && slots[k] === slots[k - 1]) continue;
          const off = slots[k] - start;
          const full = out.push(run.subarray(off * d, off * d + d), this.#ids[slots[k]]);
          if (full) yield full;
        }
        i = j;
      }
    }
    const rest = out.flush();
    if (rest) yield rest;
  }

  /** Makes the file durable and records that it reflects change `seq` of database `tag`. */
  async save(seq: number, tag: string): Promise<void> {
    // Snapshot first: the ids and size must describe the file exactly as fsynced.
    const size = this.#size;
    const ids = Buffer.from(this.#ids.buffer, this.#ids.byteOffset, size * 8);
    fs.ftruncateSync(this.#fd, size * this.#rowBytes);
    this.#spaceRows = size;
    fs.fsyncSync(this.#fd);
    await writeFileDurably(idsPath(this.file), Buffer.from(ids));
    const side: Sidecar = { format: FORMAT, seq, size, dimension: this.dimension, tag };
    await writeFileDurably(sidecarPathOf(this.file), JSON.stringify(side));
  }

  close(): void {
    if (this.#fd >= 0) fs.closeSync(this.#fd);
    this.#fd = -1;
    this.#dropCopy();
  }

  /** Grows the memory copy to hold `rows` rows, or drops it when the budget says no. */
  #ensureCopy(rows: number): boolean {
    const blocks = this.#blocks;
    if (blocks === null) return false;
    const d = this.dimension;
    for (let b = 0; b * SCAN_ROWS < rows; b++) {
      const want = Math.min(SCAN_ROWS, rows - b * SCAN_ROWS);
      const have = blocks[b] ? blocks[b].length / d : 0;
      if (have >= want) continue;
      const cap = Math.min(SCAN_ROWS, Math.max(want, FIRST_BLOCK_ROWS, have * 2));
      if (!this.#budget.take((cap - have) * this.#rowBytes)) {
        this.#dropCopy();
        return false;
      }
      this.#blockBytes += (cap - have) * this.#rowBytes;
      const grown = new Float32Array(cap * d);
      if (blocks[b]) grown.set(blocks[b]);
      blocks[b] = grown;
    }
    return true;
  }

  #dropCopy(): void {
    this.#blocks = null;
    this.#budget.give(this.#blockBytes);
    this.#blockBytes = 0;
  }

  #read(into: Float32Array, slot: number, rows: number): void {
    const blocks = this.#blocks;
    if (blocks === null) return this.#readFile(into, slot, rows);
    const d = this.dimension;
    for (let r = 0; r < rows; ) {
      const s = slot + r;
      const off = s % SCAN_ROWS;
      const n = Math.min(rows - r, SCAN_ROWS - off);
      into.set(blocks[(s - off) / SCAN_ROWS].subarray(off * d, (off + n) * d), r * d);
      r += n;
    }
  }

  #readFile(into: Float32Array, slot: number, rows: number): void {
    const bytes = rows * this.#rowBytes;
    const n = fs.readSync(this.#fd, new Uint8Array(into.buffer, into.byteOffset, bytes), 0, bytes, slot * this.#rowBytes);
    if (n !== bytes) throw new Error(`vector file ${this.file}: short read at slot ${slot} (${n} of ${bytes} bytes)`);
  }

  #write(v: Float32Array, slot: number): void {
    const bytes = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
    let done = 0;
    while (done < bytes.length) done += fs.writeSync(this.#fd, bytes, done, bytes.length - done, slot * this.#rowBytes + done);
    this.#spaceRows = Math.max(this.#spaceRows, slot + v.length / this.dimension);
    const blocks = this.#blocks;
    if (blocks === null) return;
    const d = this.dimension;
    const rows = v.length / d;
    for (let r = 0; r < rows; ) {
      const s = slot + r;
      const off = s % SCAN_ROWS;
      const n = Math.min(rows - r, SCAN_ROWS - off);
      blocks[(s - off) / SCAN_ROWS].set(v.subarray(r * d, (r + n) * d), off * d);
      r += n;
    }
  }

  #ensureIds(n: number): void {
    if (n <= this.#ids.length) return;
    const grown = new Float64Array(Math.max(n, this.#ids.length * 2));
    grown.set(this.#ids.subarray(0, this.#size));
    this.#ids = grown;
  }
}

const toF32 = (v: ArrayLike<number>): Float32Array => (v instanceof Float32Array ? v : Float32Array.from(v));

/** Packs rows into blocks of a fixed capacity; hands a block out when it is full. */
class BlockWriter {
  readonly #d: number;
  readonly #cap: number;
  #vectors: Float32Array;
  #ids: Float64Array;
  #n = 0;

  constructor(d: number, cap: number) {
    this.#d = d;
    this.#cap = Math.max(1, cap);
    this.#vectors = new Float32Array(this.#cap * d);
    this.#ids = new Float64Array(this.#cap);
  }

  push(v: Float32Array, id: number): VectorBlock | null {
    this.#vectors.set(v, this.#n * this.#d);
    this.#ids[this.#n++] = id;
    if (this.#n < this.#cap) return null;
    const full = { vectors: this.#vectors, rowIds: this.#ids };
    this.#vectors = new Float32Array(this.#cap * this.#d);
    this.#ids = new Float64Array(this.#cap);
    this.#n = 0;
    return full;
  }

  flush(): VectorBlock | null {
    if (this.#n === 0) return null;
    return { vectors: new Float32Array(this.#vectors.buffer, 0, this.#n * this.#d), rowIds: this.#ids.subarray(0, this.#n) };
  }
}
