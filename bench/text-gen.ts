/**
 * Generated prose for ingest benchmarks: a made-up vocabulary, sentences and paragraphs, never
 * repeating (so an embedding cache cannot flatter a figure). Deterministic per process.
 */
let seed = 12345;
// A 32-bit LCG in exact integer arithmetic (Math.imul): the float product `seed * 1103515245`
// loses bits past 2^53 and falls into a cycle of ~6,000 draws, which would make the text repeat
// and let the embedding cache answer most chunks.
const rnd = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % n;
const SYL = 'ka lo mi ne ra tu ve so pa li an er on in st ch th qu ar el or us is ex'.split(' ');
const VOCAB = Array.from({ length: 5000 }, () => Array.from({ length: 1 + rnd(4) }, () => SYL[rnd(SYL.length)]).join(''));
const COMMON = 'the of and to in is that for it as with was on be by this are from at or an'.split(' ');
const word = (): string => (rnd(3) === 0 ? COMMON[rnd(COMMON.length)] : VOCAB[rnd(VOCAB.length)]);
function sentence(): string {
  const w = Array.from({ length: 5 + rnd(25) }, word);
  if (rnd(6) === 0) w.splice(rnd(w.length), 0, String(rnd(10000)));
  if (rnd(4) === 0) w[rnd(w.length - 1)] += ',';
  return w.join(' ').replace(/^./, (c) => c.toUpperCase()) + ['.', '.', '.', '?', '!'][rnd(5)];
}
export const paragraph = (): string => Array.from({ length: 2 + rnd(7) }, sentence).join(' ');

export function makeText(bytes: number): Buffer {
  const parts: string[] = [];
  let n = 0;
  while (n < bytes) {
    const p = paragraph();
    parts.push(p);
    n += p.length + 2;
  }
  return Buffer.from(parts.join('\n\n'));
}

/** One passage of `minWords` to `maxWords` words (whole sentences; ingest benches' documents). */
export function passage(minWords = 150, maxWords = 250): string {
  const target = minWords + rnd(maxWords - minWords + 1);
  const words: string[] = [];
  while (words.length < target) words.push(...sentence().split(' '));
  return words.slice(0, target).join(' ').replace(/[,]?$/, '.');
}
