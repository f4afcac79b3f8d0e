/**
 * How fast this machine is right now, measured by the client between benchmark rows, so that a
 * row can be read against the machine it ran on: shared and virtual machines drift (this one's
 * speed moves by up to ~1.7x within minutes, docs/PERFORMANCE.md), and a slow row on a slow
 * machine says something else than a slow row on a normal one.
 *
 * Three single-thread figures, each the work the service's searches are bound by:
 * - memory latency: a dependent random walk over 64 MiB, twice the L3 here (graph walks);
 * - memory bandwidth: summing 64 MiB in order (the model streams its 42 MB of weights per call);
 * - arithmetic: a register-only integer loop (everything else).
 *
 * Run alone, it prints the machine's kind and one check:
 *
 *   node --import tsx bench/machine-check.ts
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

export interface MachineCheck {
  /** ns per step of the dependent random walk. */
  latencyNs: number;
  /** GB/s of the in-order sum. */
  bandwidthGBs: number;
  /** ns per iteration of the integer loop. */
  arithmeticNs: number;
}

const WORDS = 16 * 1024 * 1024; // 64 MiB of Int32

export class MachineChecker {
  private readonly next = new Int32Array(WORDS);
  private readonly data = new Float32Array(WORDS);

  /** Builds the walk's single cycle once (Sattolo's shuffle), so each check only reads. */
  constructor() {
    const next = this.next;
    for (let i = 0; i < WORDS; i++) next[i] = i;
    let s = 0x9e3779b9;
    for (let i = WORDS - 1; i > 0; i--) {
      s ^= s << 13; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
      const j = s % i;
      const t = next[i]; next[i] = next[j]; next[j] = t;
    }
    this.data.fill(1);
  }

  /** About a third of a second. The best of three tries of each figure: the machine's speed, not its hiccups. */
  check(): MachineCheck {
    let latencyNs = Infinity;
    let bandwidthGBs = 0;
    let arithmeticNs = Infinity;
    for (let round = 0; round < 3; round++) {
      const steps = 500_000;
      let p = 0;
      let t = performance.now();
      for (let i = 0; i < steps; i++) p = this.next[p];
      latencyNs = Math.min(latencyNs, ((performance.now() - t) * 1e6) / steps + (p < 0 ? 1 : 0));

      const d = this.data;
      let sum = 0;
      t = performance.now();
      for (let i = 0; i < d.length; i++) sum += d[i];
      bandwidthGBs = Math.max(bandwidthGBs, d.byteLength / ((performance.now() - t) * 1e6) + (sum < 0 ? 1 : 0));

      const iters = 20_000_000;
      let x = 1;
      t = performance.now();
      for (let i = 0; i < iters; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; }
      arithmeticNs = Math.min(arithmeticNs, ((performance.now() - t) * 1e6) / iters + (x === 0 ? 1 : 0));
    }
    return { latencyNs, bandwidthGBs, arithmeticNs };
  }
}

export const fmtCheck = (m: MachineCheck): string =>
  `memory latency ${m.latencyNs.toFixed(0)} ns, bandwidth ${m.bandwidthGBs.toFixed(1)} GB/s, arithmetic ${m.arithmeticNs.toFixed(2)} ns/iteration`;

/**
 * Cores, CPU model and vector instructions, for a bench's header: the VMs here come in an AVX2
 * kind and an AVX-512 kind whose model calls and graph walks differ 2-3x (docs/PERFORMANCE.md,
 * "Two kinds of machine"), so a figure means little without it.
 */
export function machineKind(): string {
  const cpus = os.cpus();
  let info = '';
  try {
    info = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    // Not Linux: the model name alone.
  }
  const field = (name: string) => new RegExp(`^${name}\\s*:\\s*(.*)$`, 'm').exec(info)?.[1]?.trim();
  const flags = new Set((field('flags') ?? '').split(/\s+/));
  const vector = flags.has('avx512f') ? `AVX-512${flags.has('avx512_bf16') ? ' with BF16' : ''}` : flags.has('avx2') ? 'AVX2' : 'no AVX2';
  const family = field('cpu family');
  return `${cpus.length} cores (${cpus[0]?.model}${family ? `, family ${family} model ${field('model')}` : ''}, ${vector})`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(`machine: ${machineKind()}`);
  console.log(`machine check: ${fmtCheck(new MachineChecker().check())}`);
}
