/**
 * Inputs that make a super-linear regular expression or scan show itself: long runs of one
 * character class (and a few alternations of two). Linearity tests feed each text function
 * 1 MB of every case and compare the time with 100 KB of it.
 */
import assert from 'node:assert/strict';

/** Name → a text of about `n` UTF-16 code units made of that class. */
export const WORST_CASES: Record<string, (n: number) => string> = {
  quotes: (n) => '"'.repeat(n),
  'curly quotes': (n) => '”'.repeat(n),
  'dot then quotes': (n) => `.${'"'.repeat(n - 1)}`,
  'dot quote pairs': (n) => '."'.repeat(n / 2),
  spaces: (n) => ' '.repeat(n),
  'spaces then a letter': (n) => `${' '.repeat(n - 1)}x`,
  newlines: (n) => '\n'.repeat(n),
  'newline space pairs': (n) => '\n '.repeat(n / 2),
  'newline then spaces': (n) => `\n${' '.repeat(n - 1)}`,
  'carriage returns': (n) => '\r'.repeat(n),
  tabs: (n) => '\t'.repeat(n),
  dots: (n) => '.'.repeat(n),
  'dot space pairs': (n) => '. '.repeat(n / 2),
  'question marks': (n) => '?'.repeat(n),
  ellipses: (n) => '…'.repeat(n),
  letters: (n) => 'a'.repeat(n),
  'capital letters': (n) => 'A'.repeat(n),
  digits: (n) => '7'.repeat(n),
  'newline digit pairs': (n) => '\n1'.repeat(n / 2),
  'list markers': (n) => '\n- '.repeat(n / 3),
  'pipes and dashes': (n) => '|--'.repeat(n / 3),
  asterisks: (n) => '*'.repeat(n),
  'asterisk letter pairs': (n) => '*a'.repeat(n / 2),
  backticks: (n) => '`'.repeat(n),
  'open brackets': (n) => '['.repeat(n),
  'angle brackets': (n) => '<a'.repeat(n / 2),
  cjk: (n) => '漢'.repeat(n),
  'cjk full stops': (n) => '。'.repeat(n),
  'combining marks': (n) => `e${'\u0301'.repeat(n - 1)}`,
  emoji: (n) => '😀'.repeat(n / 2),
  'zero-width spaces': (n) => '\u200b'.repeat(n),
  'no-break spaces': (n) => '\u00a0'.repeat(n),
  'control characters': (n) => '\u0007'.repeat(n),
  commas: (n) => ','.repeat(n),
};

const SMALL = 100_000;
const LARGE = 1_000_000;

/** CPU milliseconds of one call: the time other processes take on a shared machine does not count. */
function timeOf(fn: (text: string) => unknown, text: string): number {
  const t0 = process.cpuUsage();
  fn(text);
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / 1000;
}

/**
 * Runs `fn` on 100 KB and 1 MB of every worst case and asserts that 1 MB takes under 50 times the
 * 100 KB run (a quadratic scan takes 100 times) and under 10 s of CPU (a guard against a hang, not
 * a speed target: the chunker takes 0.5-1 s on a slow shared machine). The 100 KB time is floored
 * at 5 ms, so noise on tiny times does not fail it.
 */
export function assertLinearOnWorstCases(fn: (text: string) => unknown, cases: Record<string, (n: number) => string> = WORST_CASES): void {
  const slow: string[] = [];
  for (const [name, make] of Object.entries(cases)) {
    const small = make(SMALL);
    const large = make(LARGE);
    const warmUp = timeOf(fn, small); // regex compilation, JIT
    if (warmUp >= 500) {
      // Even linear, 1 MB would take 5 s; quadratic, minutes.
      slow.push(`${name}: 100 KB ${warmUp.toFixed(1)} ms`);
      continue;
    }
    const tSmall = Math.min(timeOf(fn, small), timeOf(fn, small), timeOf(fn, small));
    const tooSlow = (t: number) => t >= 10_000 || t / Math.max(tSmall, 5) >= 50;
    // The best of up to three runs: a garbage collection of another run's leftovers is not the function's cost.
    let tLarge = timeOf(fn, large);
    for (let i = 0; i < 2 && tooSlow(tLarge); i++) tLarge = Math.min(tLarge, timeOf(fn, large));
    if (tooSlow(tLarge)) {
      slow.push(`${name}: 100 KB ${tSmall.toFixed(1)} ms, 1 MB ${tLarge.toFixed(1)} ms`);
    }
  }
  assert.deepEqual(slow, [], `not linear on:\n${slow.join('\n')}`);
}
