import type { EmbeddingModel, TokenizedText } from './model.ts';

export interface FakeEmbeddingModelOptions {
  name?: string;
  dimension?: number;
  maxTokens?: number;
  /** Wait this long (ms) in every embed call, to let callers overlap in tests. Default 0. */
  delayMs?: number;
  /** Make a model call fail: return true (or throw) to reject that call. */
  failWhen?: (texts: string[]) => boolean;
}

/** FNV-1a, 32 bit. */
function fnv1a(s: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * A deterministic, instant stand-in for a real model, for tests that need vectors but no
 * meaning: each text maps to a fixed pseudo-random unit vector (hash of the text seeds a PRNG).
 * "Tokens" are whitespace-separated words, [CLS]/[SEP] counted as in the real model.
 * It counts its calls so batching can be checked.
 */
export class FakeEmbeddingModel implements EmbeddingModel {
  readonly name: string;
  readonly dimension: number;
  readonly maxTokens: number;
  private readonly delayMs: number;
  private readonly failWhen?: (texts: string[]) => boolean;
  /** embed() calls and the texts of each, in order. */
  readonly calls: string[][] = [];
  disposed = false;

  constructor(opts: FakeEmbeddingModelOptions = {}) {
    this.name = opts.name ?? 'fake';
    this.dimension = opts.dimension ?? 8;
    this.maxTokens = opts.maxTokens ?? 256;
    this.delayMs = opts.delayMs ?? 0;
    this.failWhen = opts.failWhen;
    if (!Number.isInteger(this.dimension) || this.dimension < 1) throw new RangeError('dimension must be an integer >= 1');
  }

  get callCount(): number {
    return this.calls.length;
  }

  /** The vector this model gives `text` (synchronously, without counting a call). */
  vectorOf(text: string): Float32Array {
    const v = new Float32Array(this.dimension);
    let state = fnv1a(text) || 1;
    let norm = 0;
    for (let d = 0; d < this.dimension; d++) {
      // xorshift32 -> uniform in [-1, 1)
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      state >>>= 0;
      const x = state / 0x80000000 - 1;
      v[d] = x;
      norm += x * x;
    }
    const s = 1 / Math.sqrt(norm || 1);
    for (let d = 0; d < this.dimension; d++) v[d] *= s;
    return v;
  }

  tokenize(text: string): TokenizedText {
    const ids: number[] = [];
    const offsets: Array<[number, number]> = [];
    for (const m of text.matchAll(/\S+/g)) {
      ids.push(fnv1a(m[0]) % 30000);
      offsets.push([m.index!, m.index! + m[0].length]);
    }
    return { ids, offsets };
  }

  countTokens(text: string): number {
    return Math.min(this.tokenize(text).ids.length + 2, this.maxTokens);
  }

  async embed(texts: string[]): Promise<{ vectors: Float32Array[]; tokens: number[] }> {
    if (this.disposed) throw new Error(`model "${this.name}" is disposed`);
    this.calls.push([...texts]);
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    else await Promise.resolve();
    if (this.failWhen?.(texts)) throw new Error(`fake model failure on ${texts.length} texts`);
    return { vectors: texts.map((t) => this.vectorOf(t)), tokens: texts.map((t) => this.countTokens(t)) };
  }

  async dispose(): Promise<void> {
    this.disposed = true;
  }
}
