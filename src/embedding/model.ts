import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { AutoTokenizer, env } from '@huggingface/transformers';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { digestFiles } from '../platform/file-digest.ts';
import { encoderFeeds, meanPoolNormalize, type EncoderInputs } from '../platform/sentence-encoder.ts';

/**
 * A sentence-embedding model: text in, one L2-normalised vector per text out.
 *
 * The real implementation (loadModel) reproduces sentence-transformers exactly: word-piece
 * tokens truncated to `maxTokens` *including* [CLS] and [SEP] (the final [SEP] is kept, unlike
 * @huggingface/transformers' own truncation), a batch padded to its longest member, mean pooling
 * over real tokens, L2 normalisation.
 */
export interface EmbeddingModel {
  readonly name: string;
  readonly dimension: number;
  /** Most tokens the model sees per text, special tokens included. */
  readonly maxTokens: number;
  /** One vector per text (same order) and each text's token count after truncation, specials included. */
  embed(texts: string[]): Promise<{ vectors: Float32Array[]; tokens: number[] }>;
  /** Word-piece ids WITHOUT special tokens and without truncation (for chunking). */
  tokenize(text: string): TokenizedText;
  /** Tokens the model sees for this text: specials included, after truncation. */
  countTokens(text: string): number;
  dispose(): Promise<void>;
}

export interface TokenizedText {
  ids: number[];
  /**
   * Character offsets [start, end) of each id in the original text, when the tokenizer can tell.
   * The bundled tokenizer cannot (it normalises before splitting), so this is left out.
   */
  offsets?: Array<[number, number]>;
}

export interface LoadModelOptions {
  /** ONNX Runtime intra-op threads. Default DEFAULT_THREADS. */
  threads?: number;
  /** Most padded tokens (rows × padded length) per model call. Default DEFAULT_CALL_TOKENS. */
  callTokens?: number;
  /** Most rows × padded length² per model call (attention is quadratic in length). Default DEFAULT_CALL_ATTENTION. */
  callAttention?: number;
  /** Most texts per call the caller sends (the Embedder's maxBatch), for the warm-up. Default DEFAULT_CALL_ROWS. */
  callRows?: number;
}

/**
 * The model's memory follows the largest call it has made (onnxruntime keeps the high-water mark),
 * so every call is held to these sizes whatever batch arrives: a batch over them is sorted by
 * length and run as several calls of similar lengths, which also keeps padding low.
 * 4,096 tokens is 16 texts of 256; the attention bound makes that 8 texts at 256 tokens.
 */
export const DEFAULT_CALL_TOKENS = 4096;
export const DEFAULT_CALL_ATTENTION = 4096 * 128;
/** A call up to this many padded tokens (rows × longest) is a short query's and does not trigger the warm-up. */
export const SHORT_CALL_TOKENS = 128;
/** VSS_EMBED_MAX_BATCH's default. */
export const DEFAULT_CALL_ROWS = 32;

/**
 * Measured on the 2-core target (bench/embedding.bench.ts): 1 thread serves short queries as
 * fast as 2 (the threading overhead eats the gain on tiny inputs) and leaves the other core to
 * the HTTP server and storage; 2 threads only help large batches of long passages, and those
 * (written text, uploads) run on the bulk threads instead, one session per core (bulk-pool.ts).
 */
export const DEFAULT_THREADS = 1;

/** Basic facts about a model folder, read without loading the model. */
export interface ModelInfo {
  name: string;
  dir: string;
  dimension: number;
  maxTokens: number;
}

/*
 * The small files (config.json, SHA256SUMS...) are read synchronously on purpose: a few hundred
 * bytes each, and every async read waits for a turn of the event loop, which a starting server
 * does not give until its app is built; the load would reach the checksum worker (digestFiles)
 * only then instead of at once, and the main thread would wait for it afterwards.
 */
const exists = (p: string): boolean => {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
};

function readJson(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`${file} is not valid JSON: ${(e as Error).message}`, { cause: e });
  }
}

/** Reads dimension (config.json hidden_size) and maxTokens (sentence_bert_config.json max_seq_length). */
export async function readModelInfo(modelDir: string, name: string): Promise<ModelInfo> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) throw new Error(`invalid model name "${name}": expected a folder name`);
  const dir = path.resolve(modelDir, name);
  if (!exists(dir)) throw new Error(`model "${name}" not found: looked for the folder ${dir}`);
  const config = readJson(path.join(dir, 'config.json'));
  const dimension = config.hidden_size;
  if (typeof dimension !== 'number' || !Number.isInteger(dimension) || dimension < 1) {
    throw new Error(`${path.join(dir, 'config.json')} has no valid hidden_size`);
  }
  const maxPositions = typeof config.max_position_embeddings === 'number' ? config.max_position_embeddings : Infinity;
  let maxTokens: number;
  const sbertFile = path.join(dir, 'sentence_bert_config.json');
  if (exists(sbertFile)) {
    const sbert = readJson(sbertFile);
    if (typeof sbert.max_seq_length !== 'number' || !Number.isInteger(sbert.max_seq_length) || sbert.max_seq_length < 2) {
      throw new Error(`${sbertFile} has no valid max_seq_length`);
    }
    maxTokens = sbert.max_seq_length;
  } else {
    maxTokens = Number.isFinite(maxPositions) ? maxPositions : 512;
  }
  return { name, dir, dimension, maxTokens: Math.min(maxTokens, maxPositions) };
}

/**
 * Checks every file listed in `<dir>/SHA256SUMS` (`sha256sum` format) and returns their paths as
 * listed. Throws an Error naming the first missing or mismatching file; a missing or empty
 * SHA256SUMS is an error too.
 */
export async function verifyChecksums(dir: string): Promise<string[]> {
  const sumsFile = path.join(dir, 'SHA256SUMS');
  let text: string;
  try {
    text = readFileSync(sumsFile, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${sumsFile}: ${(e as Error).message}`, { cause: e });
  }
  const entries: Array<{ hex: string; file: string; rel: string }> = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = /^([0-9a-fA-F]{64}) [ *](.+)$/.exec(line);
    if (!m) throw new Error(`${sumsFile} line ${i + 1} is not "<sha256>  <file>"`);
    const rel = m[2];
    const file = path.resolve(dir, rel);
    if (path.relative(dir, file).startsWith('..') || path.isAbsolute(path.relative(dir, file))) {
      throw new Error(`${sumsFile} line ${i + 1} names a file outside the model folder: ${rel}`);
    }
    entries.push({ hex: m[1].toLowerCase(), file, rel });
  }
  if (entries.length === 0) throw new Error(`${sumsFile} lists no files`);
  // On a worker thread: ~90 MB of hashing runs beside the app's start instead of holding it up.
  const digests = await digestFiles(entries.map((e) => e.file));
  entries.forEach(({ hex, file, rel }, i) => {
    const d = digests[i];
    if (d instanceof Error) {
      throw new Error(`model file ${rel} (${file}) listed in SHA256SUMS cannot be read: ${d.message}`, { cause: d });
    }
    if (d.sha256 !== hex) throw new Error(`model file ${rel} (${file}) does not match SHA256SUMS (expected ${hex}, got ${d.sha256})`);
  });
  return entries.map((e) => e.rel);
}

/* transformers.js keeps its settings in one global `env`; loads are serialised so that two
 * registries with different model folders cannot see each other's localModelPath. */
let loadChain: Promise<unknown> = Promise.resolve();

/** What is used from the tokenizer library: text to ids. */
interface TokenizerLike {
  encode(text: string, opts: { add_special_tokens: boolean }): number[];
  readonly pad_token_id?: number;
}
/** Ids to hidden states: one model call, writing `last_hidden_state` into `output` (batch × seq × dimension floats). */
type Forward = (inputs: EncoderInputs, dims: number[], output: Tensor) => Promise<void>;

/** The ONNX graph file transformers.js would pick for dtype fp32. */
const ONNX_FILE = path.join('onnx', 'model.onnx');

/**
 * Loads `<modelDir>/<name>/` after checking its SHA256SUMS. Throws an Error saying where it looked
 * if the folder is missing, naming the file if a checksum fails.
 */
export async function loadModel(modelDir: string, name: string, opts: LoadModelOptions = {}): Promise<EmbeddingModel> {
  const run = loadChain.then(() => load(modelDir, name, opts));
  loadChain = run.catch(() => undefined);
  return run;
}

async function load(modelDir: string, name: string, opts: LoadModelOptions): Promise<EmbeddingModel> {
  const info = await readModelInfo(modelDir, name);
  await verifyChecksums(info.dir);
  return open(modelDir, info, opts);
}

/**
 * Opens a model whose files loadModel has already checked in this process's lifetime: the bulk
 * embedding threads (bulk-pool.ts) open copies of a loaded model without hashing ~90 MB again.
 */
export async function openCheckedModel(modelDir: string, name: string, opts: LoadModelOptions = {}): Promise<EmbeddingModel> {
  const run = loadChain.then(async () => open(modelDir, await readModelInfo(modelDir, name), opts));
  loadChain = run.catch(() => undefined);
  return run;
}

async function open(modelDir: string, info: ModelInfo, opts: LoadModelOptions): Promise<EmbeddingModel> {
  const { name } = info;
  const threads = opts.threads ?? DEFAULT_THREADS;

  env.localModelPath = path.resolve(modelDir) + path.sep;
  env.allowRemoteModels = false;
  env.allowLocalModels = true;

  const tokenizer = await AutoTokenizer.from_pretrained(name, { local_files_only: true });
  // The session is onnxruntime-node's own rather than transformers.js's AutoModel, so that each
  // call writes into one reused output buffer: through AutoModel every call allocated ~50 KB of
  // ArrayBuffers, and 1,000 short queries cost three mark-compact collections (none now, under
  // node --trace-gc). Same runtime, same graph, same optimisation level ('all' is its default).
  const session = await InferenceSession.create(path.join(info.dir, ONNX_FILE), {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // Every batch shape (texts × tokens) would get its own cached memory plan, served as one block
    // of that shape's size from the CPU arena, which the arena never gives back: one session fed
    // batches of 1-16 texts × 2-200 tokens grew 133 → 341 MB RssAnon over 300 calls and kept growing;
    // without the plans it held 234-256 MB from the 50th call to the 600th (the arena reuses its blocks).
    enableMemPattern: false,
  });
  if (!session.outputNames.includes('last_hidden_state')) {
    await session.release();
    throw new Error(`model "${name}": ${ONNX_FILE} has no last_hidden_state output (it has ${session.outputNames.join(', ')})`);
  }
  const declared = new Set(session.inputNames);
  const forward: Forward = async (inputs, dims, output) => {
    await session.run(encoderFeeds(Tensor, declared, inputs, dims), { last_hidden_state: output });
  };
  const budget = { tokens: opts.callTokens ?? DEFAULT_CALL_TOKENS, attention: opts.callAttention ?? DEFAULT_CALL_ATTENTION };
  const model = new OnnxEmbeddingModel(info, tokenizer, forward, () => session.release(), budget);
  // One call now: a graph whose hidden size is not config.json's fails the load, not a search. The
  // largest calls (warmUpShapes) come before the first call past a short query's size, so the CPU
  // arena reaches then the size later calls would otherwise grow it to over hours, and a server
  // that only answers short queries never pays for them (~1 s of CPU, ~95 MB).
  model.pendingWarmUp = warmUpShapes(budget, info.maxTokens, opts.callRows ?? DEFAULT_CALL_ROWS);
  try {
    await model.embed(['']);
  } catch (e) {
    await model.dispose();
    throw new Error(`model "${name}": ${ONNX_FILE} does not give ${info.dimension}-dimensional token vectors as config.json says: ${(e as Error).message}`, { cause: e });
  }
  return model;
}

/**
 * Works out which ids the tokenizer's post-processor puts before and after a single text
 * (for BERT: [CLS] and [SEP]) by comparing an encoding with and without special tokens.
 */
function specialAffixes(tok: TokenizerLike): { prefix: number[]; suffix: number[] } {
  const probe = 'hello world';
  const bare = tok.encode(probe, { add_special_tokens: false });
  const full = tok.encode(probe, { add_special_tokens: true });
  for (let p = 0; p + bare.length <= full.length; p++) {
    if (bare.every((id, i) => full[p + i] === id)) return { prefix: full.slice(0, p), suffix: full.slice(p + bare.length) };
  }
  throw new Error('cannot work out the special tokens of this tokenizer');
}

class OnnxEmbeddingModel implements EmbeddingModel {
  readonly name: string;
  readonly dimension: number;
  readonly maxTokens: number;
  private readonly prefix: number[];
  private readonly suffix: number[];
  /** Word-piece tokens kept per text: maxTokens minus the specials. */
  private readonly maxBody: number;
  private readonly padId: bigint;
  private disposed = false;
  /** Model calls run one at a time (ONNX Runtime's node binding runs on the JS thread anyway), so the input buffers can be reused. */
  private chain: Promise<unknown> = Promise.resolve();
  /** Run, once, before the first call of more than SHORT_CALL_TOKENS padded tokens. */
  pendingWarmUp: readonly WarmUpShape[] = [];
  private ids = new BigInt64Array(0);
  private mask = new BigInt64Array(0);
  private types = new BigInt64Array(0);
  /**
   * The model's output, reused the same way (read before the next call starts). It keeps the size
   * of the largest batch seen: 32 texts of 256 tokens (the default VSS_EMBED_MAX_BATCH) hold 12.6 MB.
   */
  private hidden = new Float32Array(0);

  constructor(
    info: ModelInfo,
    private readonly tok: TokenizerLike,
    private readonly forward: Forward,
    private readonly release: () => Promise<unknown>,
    private readonly budget: CallBudget = { tokens: DEFAULT_CALL_TOKENS, attention: DEFAULT_CALL_ATTENTION },
  ) {
    this.name = info.name;
    this.dimension = info.dimension;
    this.maxTokens = info.maxTokens;
    const { prefix, suffix } = specialAffixes(tok);
    this.prefix = prefix;
    this.suffix = suffix;
    this.maxBody = this.maxTokens - prefix.length - suffix.length;
    this.padId = BigInt(tok.pad_token_id ?? 0);
    if (this.maxBody < 0) throw new Error(`model "${this.name}": max_seq_length ${this.maxTokens} leaves no room for text`);
  }

  tokenize(text: string): TokenizedText {
    return { ids: this.tok.encode(text, { add_special_tokens: false }) };
  }

  countTokens(text: string): number {
    const n = this.tok.encode(text, { add_special_tokens: false }).length;
    return Math.min(n, this.maxBody) + this.prefix.length + this.suffix.length;
  }

  /** Word pieces without special tokens, cut to what fits beside them. */
  private bodyIds(text: string): number[] {
    if (typeof text !== 'string') throw new TypeError('embed() takes strings');
    const ids = this.tok.encode(text, { add_special_tokens: false });
    return ids.length > this.maxBody ? ids.slice(0, this.maxBody) : ids;
  }

  embed(texts: string[]): Promise<{ vectors: Float32Array[]; tokens: number[] }> {
    if (this.disposed) return Promise.reject(new Error(`model "${this.name}" is disposed`));
    if (texts.length === 0) return Promise.resolve({ vectors: [], tokens: [] });
    const next = this.chain.then(() => this.run(texts));
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async run(texts: string[]): Promise<{ vectors: Float32Array[]; tokens: number[] }> {
    if (this.disposed) throw new Error(`model "${this.name}" is disposed`);
    const { prefix, suffix } = this;
    // Tokenise without truncation, cut the word pieces, then add [CLS] ... [SEP] ourselves.
    const bodies = texts.map((t) => this.bodyIds(t));
    const tokens = bodies.map((b) => b.length + prefix.length + suffix.length);
    if (this.pendingWarmUp.length > 0 && texts.length * Math.max(...tokens) > SHORT_CALL_TOKENS) {
      const shapes = this.pendingWarmUp;
      this.pendingWarmUp = [];
      await this.warmCalls(shapes);
    }
    const groups = callGroups(tokens, this.budget);
    if (groups.length === 1) return { vectors: await this.call(bodies, tokens), tokens };
    const vectors = new Array<Float32Array>(texts.length);
    for (const g of groups) {
      const out = await this.call(g.map((i) => bodies[i]), g.map((i) => tokens[i]));
      g.forEach((i, k) => (vectors[i] = out[k]));
    }
    return { vectors, tokens };
  }

  /** One model call over texts already cut to fit. */
  private async call(bodies: number[][], tokens: number[]): Promise<Float32Array[]> {
    const { prefix, suffix } = this;
    let seq = 0;
    for (const n of tokens) if (n > seq) seq = n;
    const batch = bodies.length;
    const size = batch * seq;

    if (this.ids.length < size) {
      const cap = Math.max(size, this.ids.length * 2);
      this.ids = new BigInt64Array(cap);
      this.mask = new BigInt64Array(cap);
      this.types = new BigInt64Array(cap); // stays all zeros
    }
    const ids = this.ids.subarray(0, size);
    const mask = this.mask.subarray(0, size);
    ids.fill(this.padId); // masked out, so the value only has to be a valid id
    mask.fill(0n);
    for (let b = 0; b < batch; b++) {
      let o = b * seq;
      for (const id of prefix) ids[o++] = BigInt(id);
      for (const id of bodies[b]) ids[o++] = BigInt(id);
      for (const id of suffix) ids[o++] = BigInt(id);
      mask.fill(1n, b * seq, b * seq + tokens[b]);
    }
    const dims = [batch, seq];
    const outSize = size * this.dimension;
    if (this.hidden.length < outSize) this.hidden = new Float32Array(Math.max(outSize, this.hidden.length * 2));
    const hidden = this.hidden.subarray(0, outSize);
    // onnxruntime checks the given output's shape against what the graph computes and fails the call otherwise.
    await this.forward({ input_ids: ids, attention_mask: mask, token_type_ids: this.types.subarray(0, size) }, dims, new Tensor('float32', hidden, [batch, seq, this.dimension]));
    return meanPoolNormalize(hidden, batch, seq, this.dimension, tokens);
  }

  /** One call per shape, of `rows` texts of `length` tokens each (specials included). */
  private async warmCalls(shapes: readonly WarmUpShape[]): Promise<void> {
    const filler = this.tok.encode('the', { add_special_tokens: false })[0] ?? 0;
    const specials = this.prefix.length + this.suffix.length;
    for (const { rows, length } of shapes) {
      if (this.disposed) return;
      const body = new Array<number>(Math.max(0, length - specials)).fill(filler);
      await this.call(new Array<number[]>(rows).fill(body), new Array<number>(rows).fill(body.length + specials));
    }
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await this.chain;
    await this.release();
  }
}

export interface CallBudget {
  /** Most rows × padded length per call. */
  readonly tokens: number;
  /** Most rows × padded length² per call. */
  readonly attention: number;
}

export interface WarmUpShape {
  readonly rows: number;
  /** Padded tokens per row, specials included. */
  readonly length: number;
}

/**
 * The calls that take ONNX Runtime's CPU arena to its high-water mark. The arena keeps every block
 * it has served and extends itself by a new mapping (~24 MB here) only when a call needs more than
 * it holds; every call is bounded (the budget, and at most `maxRows` texts), so once the largest
 * have run it does not grow again. The largest: the most tokens, the most attention (rows ×
 * length²) and the longest texts that fit, each at the longest length that reaches it: by default
 * 32 × 128 (both bounds at once) and 8 × 256.
 */
export function warmUpShapes(budget: CallBudget, maxTokens: number, maxRows: number): WarmUpShape[] {
  const rowsAt = (length: number) => Math.max(1, Math.min(maxRows, Math.floor(Math.min(budget.tokens / length, budget.attention / (length * length)))));
  let mostTokens = 2;
  let mostAttention = 2;
  for (let length = 2; length <= maxTokens; length++) {
    const rows = rowsAt(length);
    if (rows * length >= rowsAt(mostTokens) * mostTokens) mostTokens = length;
    if (rows * length * length >= rowsAt(mostAttention) * mostAttention ** 2) mostAttention = length;
  }
  return [...new Set([mostTokens, mostAttention, maxTokens])].map((length) => ({ rows: rowsAt(length), length }));
}

/**
 * Splits a batch into model calls within the budget: indices sorted by token count, each call
 * taking the next texts while its rows × longest length stays within both bounds. A text is
 * never split, so one text longer than the budget still makes one call of its own.
 */
export function callGroups(tokens: readonly number[], budget: CallBudget): number[][] {
  let longest = 0;
  for (const n of tokens) if (n > longest) longest = n;
  if (tokens.length * longest <= budget.tokens && tokens.length * longest * longest <= budget.attention) return [tokens.map((_, i) => i)];
  const order = tokens.map((_, i) => i).sort((a, b) => tokens[a] - tokens[b]);
  const groups: number[][] = [];
  let group: number[] = [];
  for (const i of order) {
    const len = tokens[i]; // the longest so far: the order is ascending
    const rows = group.length + 1;
    if (group.length > 0 && (rows * len > budget.tokens || rows * len * len > budget.attention)) {
      groups.push(group);
      group = [];
    }
    group.push(i);
  }
  groups.push(group);
  return groups;
}
