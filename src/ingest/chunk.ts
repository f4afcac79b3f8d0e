import { ServiceError, type FieldError } from '../errors.ts';

/** What chunking needs from a model: its word pieces (without special tokens) for a text. */
export interface ChunkTokenizer {
  tokenize(text: string): { ids: ArrayLike<number> };
}

export interface ChunkOptions {
  /** Most content tokens per chunk (special tokens excluded): at most the model window minus 2. */
  chunkSize: number;
  /** Tokens of trailing sentences repeated at the start of the next chunk; at most chunkSize / 2. */
  overlap: number;
  /**
   * `soft` (default): a single line break is a space unless a sentence or list item ends there
   * (hard-wrapped prose, PDF lines). `hard`: every line is its own unit (CSV rows, JSON lines).
   */
  lines?: 'soft' | 'hard';
}

export interface Chunk {
  index: number;
  /** A slice of the input text, exactly: text.slice(start, end). */
  text: string;
  /** Word pieces in `text`, special tokens excluded (<= chunkSize). */
  tokens: number;
  start: number;
  end: number;
}

/**
 * 200 content tokens + [CLS] + [SEP] = 202 of all-MiniLM-L6-v2's 256: room to spare for a
 * tokenizer that counts a little differently, and passages of ~150 words, which this model
 * (trained on sentence pairs) embeds better than a full window.
 */
export const DEFAULT_CHUNK_SIZE = 200;
export const DEFAULT_CHUNK_OVERLAP = 40;
export const MIN_CHUNK_SIZE = 16;
/** 256 (all-MiniLM-L6-v2's window) minus [CLS] and [SEP]. */
export const MAX_CHUNK_SIZE = 254;

/** No unit, and no chunk, is longer than chunkSize times this many characters (a run of
 * characters the tokenizer folds into few tokens, like a 10 000-letter "word" that is one [UNK]). */
const MAX_CHARS_PER_TOKEN = 32;

/**
 * Checks chunk_size (MIN_CHUNK_SIZE..min(MAX_CHUNK_SIZE, maxContentTokens)) and chunk_overlap
 * (0..chunkSize/2), both integers; absent values take the defaults. Throws validation_failed
 * naming `/body/chunk_size` and `/body/chunk_overlap`.
 */
export function validateChunkOptions(
  input: { chunkSize?: unknown; overlap?: unknown },
  maxContentTokens: number = MAX_CHUNK_SIZE,
): { chunkSize: number; overlap: number } {
  const errors: FieldError[] = [];
  const max = Math.min(MAX_CHUNK_SIZE, maxContentTokens);
  const chunkSize = input.chunkSize ?? DEFAULT_CHUNK_SIZE;
  const sizeOk = typeof chunkSize === 'number' && Number.isInteger(chunkSize) && chunkSize >= MIN_CHUNK_SIZE && chunkSize <= max;
  if (!sizeOk) errors.push({ path: '/body/chunk_size', message: `must be an integer from ${MIN_CHUNK_SIZE} to ${max} (tokens)` });
  const overlap = input.overlap ?? Math.min(DEFAULT_CHUNK_OVERLAP, sizeOk ? Math.floor((chunkSize as number) / 2) : DEFAULT_CHUNK_OVERLAP);
  const half = sizeOk ? Math.floor((chunkSize as number) / 2) : Math.floor(max / 2);
  if (!(typeof overlap === 'number' && Number.isInteger(overlap) && overlap >= 0 && overlap <= half)) {
    errors.push({ path: '/body/chunk_overlap', message: `must be an integer from 0 to ${half} (half the chunk size, in tokens)` });
  }
  if (errors.length > 0) {
    throw new ServiceError('validation_failed', errors.map((e) => `${e.path}: ${e.message}`).join('; '), { errors });
  }
  return { chunkSize: chunkSize as number, overlap: overlap as number };
}

/* Boundary strength after a unit; the packer ends a chunk at the strongest one it can. */
const PARAGRAPH = 3;
const LINE_END = 2.5; // a sentence that ends a line (a CSV row, a list item)
const SENTENCE = 2;
const CLAUSE = 1; // a line break inside a sentence, or , ; : after a word
const WORD = 0;

interface Unit {
  start: number;
  end: number;
  tokens: number;
  brk: number;
}

const ABBREVIATIONS = new Set(
  'mr mrs ms dr prof sr jr st vs etc eg ie al fig figs no nos vol pp p ed eds inc ltd co corp dept est approx ca cf jan feb mar apr jun jul aug sep sept oct nov dec mt ft gen gov sen rep rev'.split(
    ' ',
  ),
);

/* Terminal punctuation (and closing quotes/brackets) followed by whitespace, or CJK terminal
 * punctuation, or a line break before a list item / heading / quote / table row. */
// (?<!…) keeps a match from starting inside a run of punctuation: linear even on '.'.repeat(1e6).
const SOFT_BOUNDARY = /(?<![.!?…‽])[.!?…‽]+["'”’»)\]]*(?=\s)|[。！？]+["'”’」』)\]]*|\n(?=[-*•+>#|] |\d{1,3}[.)] )/gu;
const HARD_BOUNDARY = /(?<![.!?…‽])[.!?…‽]+["'”’»)\]]*(?=\s)|[。！？]+["'”’」』)\]]*|\n/gu;

/** Sentence ranges [start, end) inside text[from, to), trimmed, in order. */
function sentences(text: string, from: number, to: number, hard: boolean): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const re = hard ? HARD_BOUNDARY : SOFT_BOUNDARY;
  const para = text.slice(from, to);
  re.lastIndex = 0;
  let start = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(para)) !== null) {
    const end = m[0] === '\n' ? m.index : m.index + m[0].length;
    if (m[0] !== '\n' && m[0][0] === '.') {
      // "Dr. Who", "J. Smith", "e.g. this", "3. item": not the end of a sentence.
      const word = /([\p{L}\p{N}.]+)$/u.exec(para.slice(Math.max(start, m.index - 12), m.index))?.[1] ?? '';
      const bare = word.replace(/\./g, '').toLowerCase();
      const next = /^\s*(\S)/u.exec(para.slice(end, end + 8))?.[1] ?? '';
      if (m[0] === '.' && (ABBREVIATIONS.has(bare) || (word.length === 1 && /\p{Lu}/u.test(word)) || /^\p{Ll}/u.test(next))) continue;
    }
    pushTrimmed(para, start, end, out, from);
    start = m[0] === '\n' ? m.index + 1 : end;
  }
  pushTrimmed(para, start, para.length, out, from);
  return out;
}

const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;

function pushTrimmed(s: string, a: number, b: number, out: Array<[number, number]>, base: number): void {
  while (a < b && /\s/.test(s[a])) a++;
  while (b > a && /\s/.test(s[b - 1])) b--;
  if (b > a) out.push([base + a, base + b]);
}

/**
 * Splits text into chunks of at most `chunkSize` word pieces. Units are sentences (inside
 * paragraphs: blank-line separated); a sentence longer than a chunk is split at its line breaks,
 * then at words, and a single overlong word by characters. Consecutive units are packed up to
 * chunkSize, ending each chunk at the strongest boundary (paragraph > sentence at a line end >
 * sentence > line break / clause > word) that leaves it at least half full, and the next chunk starts with the trailing units of
 * the previous one worth up to `overlap` tokens. Every chunk's text is a slice of the input (the
 * original characters), and its token count is checked with the tokenizer itself.
 *
 * Each sentence is tokenized once (plus once more per chunk for the check), so the cost is linear
 * in the text.
 */
export function chunkText(text: string, tokenizer: ChunkTokenizer, opts: ChunkOptions): Chunk[] {
  const steps = chunkSteps(text, tokenizer, opts);
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

/** Pause between slices of work, so that the event loop keeps serving other requests. */
const SLICE_MS = 20;

/**
 * chunkText, giving the event loop a turn every ~20 ms (a 5 MB text takes seconds to tokenize;
 * a server should not stall for that long).
 */
export async function chunkTextAsync(text: string, tokenizer: ChunkTokenizer, opts: ChunkOptions): Promise<Chunk[]> {
  const steps = chunkSteps(text, tokenizer, opts);
  let r = steps.next();
  while (!r.done) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    r = steps.next();
  }
  return r.value;
}

/** The work of chunkText; yields (nothing) whenever SLICE_MS have passed since the last yield. */
function* chunkSteps(text: string, tokenizer: ChunkTokenizer, opts: ChunkOptions): Generator<void, Chunk[], void> {
  const { chunkSize, overlap } = validateChunkOptions({ chunkSize: opts.chunkSize, overlap: opts.overlap });
  let sliceStart = performance.now();
  let tick = 0;
  /** True when it is time to yield (checked cheaply: the clock is read every 16 calls). */
  const due = (): boolean => {
    if ((++tick & 15) !== 0 || performance.now() - sliceStart < SLICE_MS) return false;
    sliceStart = performance.now();
    return true;
  };
  const hard = opts.lines === 'hard';
  const split = new UnitSplitter(text, tokenizer, chunkSize, overlap);
  for (const [a, b] of paragraphs(text)) {
    const sents = sentences(text, a, b, hard);
    for (let k = 0; k < sents.length; k++) {
      if (due()) yield;
      const [sa, sb] = sents[k];
      split.addPiece(sa, sb, k === sents.length - 1 ? PARAGRAPH : text[sb] === '\n' ? LINE_END : SENTENCE, true);
    }
  }
  const { count, countWord } = split;
  return yield* packUnits(text, split.units, { chunkSize, overlap, maxUnitChars: split.maxUnitChars, count, countWord, due });
}

/** Paragraphs: separated by a blank line (normalised text), or by any run of whitespace with two line breaks. */
function paragraphs(text: string): Array<[number, number]> {
  const paraRe = /\n[^\S\n]*\n\s*/g;
  let pStart = 0;
  const out: Array<[number, number]> = [];
  let pm: RegExpExecArray | null;
  while ((pm = paraRe.exec(text)) !== null) {
    pushTrimmed(text, pStart, pm.index, out, 0);
    pStart = pm.index + pm[0].length;
  }
  pushTrimmed(text, pStart, text.length, out, 0);
  return out;
}

/**
 * Cuts sentences into units that packing can work with: each at most chunkSize tokens, split at
 * line breaks, then words, then characters, each unit remembering how strong a break ends it.
 */
class UnitSplitter {
  readonly units: Unit[] = [];
  readonly maxUnitChars: number;
  /** Pieces of an overlong word are small (half the overlap), so that packing and overlap work on them too. */
  readonly #pieceBudget: number;
  readonly #wordCache = new Map<string, number>();

  constructor(
    private readonly text: string,
    private readonly tokenizer: ChunkTokenizer,
    private readonly chunkSize: number,
    overlap: number,
  ) {
    this.maxUnitChars = chunkSize * MAX_CHARS_PER_TOKEN;
    this.#pieceBudget = overlap >= 8 ? Math.floor(overlap / 2) : Math.min(chunkSize, 8);
  }

  readonly count = (s: string): number => this.tokenizer.tokenize(s).ids.length;

  readonly countWord = (w: string): number => {
    let n = this.#wordCache.get(w);
    if (n === undefined) {
      if (this.#wordCache.size > 200_000) this.#wordCache.clear();
      n = this.count(w);
      this.#wordCache.set(w, n);
    }
    return n;
  };

  /** One sentence (or line): a unit, or split finer. */
  addPiece(a: number, b: number, brk: number, canSplitLines: boolean): void {
    const { text } = this;
    if (b - a <= this.maxUnitChars) {
      const n = this.count(text.slice(a, b));
      if (n <= this.chunkSize) {
        this.units.push({ start: a, end: b, tokens: n, brk });
        return;
      }
    }
    if (canSplitLines && text.slice(a, b).includes('\n')) {
      const lines: Array<[number, number]> = [];
      pushLines(text, a, b, lines);
      lines.forEach(([la, lb], k) => this.addPiece(la, lb, k === lines.length - 1 ? brk : CLAUSE, false));
      return;
    }
    this.#splitWords(a, b, brk);
  }

  /** Splits text[a, b) at whitespace into words (tokens assumed additive across whitespace; chunks are checked anyway). */
  #splitWords(a: number, b: number, brkLast: number): void {
    const { text } = this;
    const re = /\S+/g;
    const seg = text.slice(a, b);
    let m: RegExpExecArray | null;
    const words: Array<[number, number]> = [];
    while ((m = re.exec(seg)) !== null) words.push([a + m.index, a + m.index + m[0].length]);
    words.forEach(([ws, we], k) => {
      const last = k === words.length - 1;
      const brk = last ? brkLast : /[,;:)]$/.test(text.slice(we - 1, we)) ? CLAUSE : WORD;
      const w = text.slice(ws, we);
      const n = w.length > this.maxUnitChars ? Infinity : this.countWord(w);
      if (n <= this.chunkSize) this.units.push({ start: ws, end: we, tokens: n, brk });
      else this.#splitChars(ws, we, brk);
    });
  }

  /**
   * Splits text[a, b) (one word, or any run without spaces) by characters into pieces of at most
   * the piece budget in tokens. The piece length follows the run's token density (from a sample,
   * then from each piece), so each piece is tokenized about once; a piece over budget is cut down
   * by binary search.
   */
  #splitChars(a: number, b: number, brkLast: number): void {
    const { text, count } = this;
    const budget = this.#pieceBudget;
    const maxPiece = budget * MAX_CHARS_PER_TOKEN;
    const lengthFor = (chars: number, tokens: number): number =>
      Math.max(1, Math.min(maxPiece, tokens === 0 ? maxPiece : Math.floor((chars / tokens) * budget * 0.9)));
    const sample = Math.min(b - a, maxPiece * 4);
    let step = lengthFor(sample, count(text.slice(a, a + sample)));
    while (a < b) {
      let hi = Math.min(b, a + step);
      if (hi < b && isHighSurrogate(text.charCodeAt(hi - 1))) hi++;
      let n = count(text.slice(a, hi));
      if (n > budget) {
        let lo = a + 1; // invariant: text[a, lo) fits (assumed for one character), text[a, hi) does not
        while (hi - lo > 1) {
          const mid = (lo + hi) >>> 1;
          if (count(text.slice(a, mid)) <= budget) lo = mid;
          else hi = mid;
        }
        hi = lo;
        if (isHighSurrogate(text.charCodeAt(hi - 1)) && hi - 1 > a) hi--; // not inside a surrogate pair
        n = count(text.slice(a, hi));
      }
      this.units.push({ start: a, end: hi, tokens: n, brk: hi === b ? brkLast : WORD });
      step = lengthFor(hi - a, n);
      a = hi;
    }
  }
}

/** What packing units into chunks needs from chunkSteps. */
interface Packing {
  chunkSize: number;
  overlap: number;
  maxUnitChars: number;
  count: (s: string) => number;
  countWord: (w: string) => number;
  /** True when it is time to yield. */
  due: () => boolean;
}

/**
 * Packs consecutive units into chunks of at most chunkSize tokens, each ending at the strongest
 * boundary that leaves it at least half full and starting with the previous chunk's overlap.
 */
function* packUnits(text: string, units: Unit[], { chunkSize, overlap, maxUnitChars, count, countWord, due }: Packing): Generator<void, Chunk[], void> {
  // Packing. A chunk holds units [i, e), preceded by the tail of unit i - 1 when `head` >= 0 (a
  // partial overlap); it must reach past the previous chunk's end (e >= minEnd).
  const chunks: Chunk[] = [];
  const n = units.length;
  let i = 0;
  let minEnd = 1;
  let head = -1;
  let headTokens = 0;
  while (i < n) {
    if (due()) yield;
    const first = head >= 0 ? head : units[i].start;
    let sum = headTokens;
    let j = i;
    while (j < n && sum + units[j].tokens <= chunkSize && (j === i || units[j].end - first <= maxUnitChars)) sum += units[j++].tokens;
    let e = j; // exclusive; j >= minEnd, as the overlap below leaves room for one new unit
    if (j < n) {
      // Full: end at the strongest boundary that keeps the chunk at least half full (the latest on a tie).
      const minFill = chunkSize / 2;
      let acc = headTokens;
      let bestBrk = -1;
      for (let k = i; k < j; k++) {
        acc += units[k].tokens;
        if (k + 1 >= minEnd && acc >= minFill && units[k].brk >= bestBrk) {
          bestBrk = units[k].brk;
          e = k + 1;
        }
      }
    }
    // Check with the tokenizer (units were counted one by one): while the slice counts more,
    // drop trailing units, then the leading (overlap) ones.
    const sliceOf = () => text.slice(head >= 0 ? head : units[i].start, units[e - 1].end);
    let slice = sliceOf();
    let tokens = count(slice);
    while (tokens > chunkSize && (e - 1 > i || head >= 0)) {
      if (e > minEnd) e--;
      else if (head >= 0) head = -1;
      else i++;
      slice = sliceOf();
      tokens = count(slice);
    }
    chunks.push({ index: chunks.length, text: slice, tokens, start: head >= 0 ? head : units[i].start, end: units[e - 1].end });
    if (e >= n) break;
    // Overlap: the trailing units of this chunk worth at most `overlap` tokens, leaving room for unit e...
    const room = Math.min(overlap, chunkSize - units[e].tokens);
    const lo = head >= 0 ? i : i + 1; // the next chunk must start after this one does
    // Among the starts that fit, the one after the strongest boundary (a row or paragraph start
    // over a sentence start), the longest on a tie.
    const s = overlapStart(units, e, lo, room, maxUnitChars);
    head = -1;
    headTokens = 0;
    if (s === e && room > 0) {
      // ...or, when the last sentence alone is longer than that, its last words.
      const last = units[e - 1];
      const tail = tailWords(text, last.start, last.end, e - 1 >= lo ? room : Math.min(room, last.tokens - 1), countWord);
      if (tail && tail.start > last.start && units[e].end - tail.start <= maxUnitChars) {
        head = tail.start;
        headTokens = tail.tokens;
      }
    }
    i = s;
    minEnd = e + 1;
  }
  return chunks;
}

/**
 * Where the next chunk starts among units [lo, e): the trailing units worth at most `room` tokens,
 * starting after the strongest boundary (a row or paragraph start over a sentence start), the
 * longest on a tie; `e` when none fits.
 */
function overlapStart(units: Unit[], e: number, lo: number, room: number, maxUnitChars: number): number {
  let s = e;
  let acc = 0;
  let bestBrk = -1;
  for (let k = e; k - 1 >= lo && acc + units[k - 1].tokens <= room && units[e].end - units[k - 1].start <= maxUnitChars; ) {
    acc += units[--k].tokens;
    const brk = k === 0 ? PARAGRAPH : units[k - 1].brk;
    if (brk >= bestBrk) {
      bestBrk = brk;
      s = k;
    }
  }
  return s;
}

/** The last words of text[a, b) worth at most `budget` tokens: where they start and their tokens. */
function tailWords(text: string, a: number, b: number, budget: number, countWord: (w: string) => number): { start: number; tokens: number } | null {
  let acc = 0;
  let start = -1;
  let k = b;
  while (k > a) {
    let ws = k;
    while (ws > a && !/\s/.test(text[ws - 1])) ws--;
    if (ws === k) {
      k--;
      continue;
    }
    const n = countWord(text.slice(ws, k));
    if (acc + n > budget) break;
    acc += n;
    start = ws;
    k = ws;
  }
  return start < 0 ? null : { start, tokens: acc };
}

function pushLines(text: string, a: number, b: number, out: Array<[number, number]>): void {
  let s = a;
  for (let k = a; k <= b; k++) {
    if (k === b || text.charCodeAt(k) === 0x0a) {
      pushTrimmed(text, s, k, out, 0);
      s = k + 1;
    }
  }
}
