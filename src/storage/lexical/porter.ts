/**
 * The Porter stemmer exactly as SQLite's FTS5 runs it (ext/fts5/fts5_tokenize.c): over the UTF-8
 * bytes of one folded unicode61 token, tokens under 3 or over 64 bytes passed through, every byte
 * that is not a-z a consonant. Its rule tables are FTS5's, in FTS5's order: a suffix that matches
 * ends the search for its step even when its condition fails.
 */

type Cond = (b: Uint8Array, n: number) => boolean;
type Rule = [suffix: string, cond: Cond | null, replacement: string];

const MAX_TOKEN = 64;
const ch = (s: string): number => s.charCodeAt(0);
const [A, E, I, O, U, Y] = ['a', 'e', 'i', 'o', 'u', 'y'].map(ch);

const isVowel = (c: number, yIsVowel: boolean): boolean => c === A || c === E || c === I || c === O || c === U || (yIsVowel && c === Y);

/** Skips one vowel run then one consonant; the index after that consonant, or 0. */
function gobbleVC(b: Uint8Array, from: number, n: number, prevCons: boolean): number {
  let cons = prevCons;
  let i = from;
  for (; i < n; i++) {
    cons = !isVowel(b[i], cons);
    if (!cons) break;
  }
  for (i++; i < n; i++) {
    cons = !isVowel(b[i], cons);
    if (cons) return i + 1;
  }
  return 0;
}

const mGt0: Cond = (b, n) => gobbleVC(b, 0, n, false) !== 0;
const mGt1: Cond = (b, n) => {
  const k = gobbleVC(b, 0, n, false);
  return k !== 0 && gobbleVC(b, k, n, true) !== 0;
};
const mEq1: Cond = (b, n) => {
  const k = gobbleVC(b, 0, n, false);
  return k !== 0 && gobbleVC(b, k, n, true) === 0;
};
/** *o: ends consonant-vowel-consonant, the last not w, x or y. */
const oStar: Cond = (b, n) => {
  const last = b[n - 1];
  if (last === ch('w') || last === ch('x') || last === ch('y')) return false;
  let mask = 0;
  let cons = false;
  for (let i = 0; i < n; i++) {
    cons = !isVowel(b[i], cons);
    mask = (mask << 1) + (cons ? 1 : 0);
  }
  return (mask & 7) === 5;
};
const mGt1AndSOrT: Cond = (b, n) => (b[n - 1] === ch('s') || b[n - 1] === ch('t')) && mGt1(b, n);
/** *v*: the stem holds a vowel (y counts after the first letter). */
const hasVowel: Cond = (b, n) => {
  for (let i = 0; i < n; i++) if (isVowel(b[i], i > 0)) return true;
  return false;
};

const STEP2: Rule[] = [
  ['ational', mGt0, 'ate'], ['tional', mGt0, 'tion'], ['enci', mGt0, 'ence'], ['anci', mGt0, 'ance'], ['izer', mGt0, 'ize'],
  ['logi', mGt0, 'log'], ['bli', mGt0, 'ble'], ['alli', mGt0, 'al'], ['entli', mGt0, 'ent'], ['eli', mGt0, 'e'], ['ousli', mGt0, 'ous'],
  ['ization', mGt0, 'ize'], ['ation', mGt0, 'ate'], ['ator', mGt0, 'ate'], ['alism', mGt0, 'al'], ['iveness', mGt0, 'ive'],
  ['fulness', mGt0, 'ful'], ['ousness', mGt0, 'ous'], ['aliti', mGt0, 'al'], ['iviti', mGt0, 'ive'], ['biliti', mGt0, 'ble'],
];
const STEP3: Rule[] = [
  ['ical', mGt0, 'ic'], ['ness', mGt0, ''], ['icate', mGt0, 'ic'], ['iciti', mGt0, 'ic'], ['ful', mGt0, ''], ['ative', mGt0, ''], ['alize', mGt0, 'al'],
];
const STEP4: Rule[] = [
  ['al', mGt1, ''], ['ance', mGt1, ''], ['ence', mGt1, ''], ['er', mGt1, ''], ['ic', mGt1, ''], ['able', mGt1, ''], ['ible', mGt1, ''],
  ['ant', mGt1, ''], ['ement', mGt1, ''], ['ment', mGt1, ''], ['ent', mGt1, ''], ['ion', mGt1AndSOrT, ''], ['ou', mGt1, ''],
  ['ism', mGt1, ''], ['ate', mGt1, ''], ['iti', mGt1, ''], ['ous', mGt1, ''], ['ive', mGt1, ''], ['ize', mGt1, ''],
];
/** Step 1b; a rule marked true sets the flag for the clean-up that follows it. */
const STEP1B: [suffix: string, cond: Cond, replacement: string, flag: boolean][] = [
  ['eed', mGt0, 'ee', false],
  ['ed', hasVowel, '', true],
  ['ing', hasVowel, '', true],
];
const STEP1B2: Rule[] = [['at', null, 'ate'], ['bl', null, 'ble'], ['iz', null, 'ize']];

/** A step's rules by their suffix's last-but-one letter, each group in FTS5's order. */
type Step = Map<number, Rule[]>;
const byLetter = (rules: Rule[]): Step => {
  const m: Step = new Map();
  for (const r of rules) {
    const c = r[0].charCodeAt(r[0].length - 2);
    if (!m.has(c)) m.set(c, []);
    m.get(c)!.push(r);
  }
  return m;
};
const [S1B2, S2, S3, S4] = [STEP1B2, STEP2, STEP3, STEP4].map(byLetter);

class Buf {
  readonly b = new Uint8Array(MAX_TOKEN + 64);
  n = 0;
  endsWith(suffix: string): boolean {
    // FTS5 wants a non-empty stem before the suffix (nBuf > suffix length).
    if (this.n <= suffix.length) return false;
    for (let i = 0; i < suffix.length; i++) if (this.b[this.n - suffix.length + i] !== suffix.charCodeAt(i)) return false;
    return true;
  }
  replace(suffixLength: number, replacement: string): void {
    this.n -= suffixLength;
    for (let i = 0; i < replacement.length; i++) this.b[this.n++] = replacement.charCodeAt(i);
  }
  /** The first rule whose suffix matches is applied when its condition holds; true when applied. */
  apply(step: Step): boolean {
    // As FTS5's generated code: only rules whose suffix has this word's last-but-one letter.
    const rules = step.get(this.b[this.n - 2]);
    if (rules === undefined) return false;
    for (const [suffix, cond, replacement] of rules) {
      if (!this.endsWith(suffix)) continue;
      if (cond !== null && !cond(this.b, this.n - suffix.length)) return false;
      this.replace(suffix.length, replacement);
      return true;
    }
    return false;
  }
  last(k = 1): number {
    return this.b[this.n - k];
  }
}

/** One buffer for every call: stemming is synchronous, and this runs for every token written or searched. */
const w = new Buf();

/**
 * Stems of recent tokens: words repeat (Zipf), and stemming is most of the tokenizing time. Two
 * generations, so that filling the cache drops only the words not seen since the last time it filled
 * (clearing it all made a vocabulary just past the cap miss on nearly every word).
 */
let recent = new Map<string, string>();
let older = new Map<string, string>();
const GENERATION_MAX = 50_000;

/** One token's stem, as FTS5's porter tokenizer gives it. */
export function porterStem(token: string): string {
  let stemmed = recent.get(token);
  if (stemmed === undefined) {
    stemmed = older.get(token) ?? stemOnce(token);
    if (recent.size >= GENERATION_MAX) {
      older = recent;
      recent = new Map();
    }
    recent.set(token, stemmed);
  }
  return stemmed;
}

function stemOnce(token: string): string {
  let ascii = true;
  for (let i = 0; i < token.length && ascii; i++) ascii = token.charCodeAt(i) < 128;
  if (ascii) {
    if (token.length > MAX_TOKEN || token.length < 3) return token;
    for (let i = 0; i < token.length; i++) w.b[i] = token.charCodeAt(i);
    w.n = token.length;
  } else {
    const bytes = Buffer.from(token, 'utf8');
    if (bytes.length > MAX_TOKEN || bytes.length < 3) return token;
    w.b.set(bytes);
    w.n = bytes.length;
  }
  stem();
  if (ascii) return String.fromCharCode(...w.b.subarray(0, w.n));
  return Buffer.from(w.b.buffer, w.b.byteOffset, w.n).toString('utf8');
}

/** The steps of FTS5's fts5PorterCb over `w`. */
function stem(): void {
  // Step 1a
  if (w.last() === ch('s')) {
    if (w.last(2) === ch('e')) {
      if ((w.n > 4 && w.last(4) === ch('s') && w.last(3) === ch('s')) || (w.n > 3 && w.last(3) === ch('i'))) w.n -= 2;
      else w.n -= 1;
    } else if (w.last(2) !== ch('s')) {
      w.n -= 1;
    }
  }
  // Step 1b
  let flagged = false;
  for (const [suffix, cond, replacement, flag] of STEP1B) {
    if (!w.endsWith(suffix)) continue;
    if (cond(w.b, w.n - suffix.length)) {
      w.replace(suffix.length, replacement);
      flagged = flag;
    }
    break;
  }
  if (flagged && !w.apply(S1B2)) {
    const c = w.last();
    if (!isVowel(c, false) && c !== ch('l') && c !== ch('s') && c !== ch('z') && c === w.last(2)) w.n--;
    else if (mEq1(w.b, w.n) && oStar(w.b, w.n)) w.b[w.n++] = E;
  }
  // Step 1c
  if (w.last() === Y && hasVowel(w.b, w.n - 1)) w.b[w.n - 1] = I;
  // Steps 2-4
  w.apply(S2);
  w.apply(S3);
  w.apply(S4);
  // Step 5a
  if (w.last() === E && (mGt1(w.b, w.n - 1) || (mEq1(w.b, w.n - 1) && !oStar(w.b, w.n - 1)))) w.n--;
  // Step 5b
  if (w.n > 1 && w.last() === ch('l') && w.last(2) === ch('l') && mGt1(w.b, w.n - 1)) w.n--;
}
