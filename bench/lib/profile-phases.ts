/**
 * Where a server's CPU time went, phase by phase: reads the V8 profiles a bench had the server
 * write (--cpu-prof, one file per thread) and the bench's `mark <name> <µs>` lines, and prints for
 * each window between marks the busy share of each thread and its functions by self time and by
 * time spent inside them (inclusive), heaviest first.
 *
 *   node --import tsx bench/lib/profile-phases.ts --log /tmp/peers.log --dir /tmp/prof [--top 25]
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { benchArgs } from './args.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const args = benchArgs({ log: undefined, dir: undefined, top: 25 });
if (!args.log || !args.dir) throw new Error('--log and --dir are required');

const marks = [...readFileSync(args.log, 'utf8').matchAll(/^mark (".*") (\d+)$/gm)].map((m) => ({ name: JSON.parse(m[1]) as string, us: Number(m[2]) }));
if (marks.length === 0) throw new Error(`no mark lines in ${args.log}`);

const label = (n: ProfileNode): string => {
  const f = n.callFrame;
  const where = f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : '';
  return `${f.functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
};

for (const file of readdirSync(args.dir).filter((f) => f.endsWith('.cpuprofile')).sort()) {
  const p = JSON.parse(readFileSync(path.join(args.dir, file), 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const windows = marks.map((m, i) => ({ name: m.name, from: m.us, to: marks[i + 1]?.us ?? p.endTime, self: new Map<string, number>(), incl: new Map<string, number>(), total: 0, idle: 0 }));
  let t = p.startTime;
  p.samples.forEach((id, i) => {
    t += p.timeDeltas[i];
    const dt = p.timeDeltas[i + 1] ?? 0;
    const w = windows.find((x) => t >= x.from && t < x.to);
    if (!w) return;
    const node = byId.get(id)!;
    w.total += dt;
    if (node.callFrame.functionName === '(idle)') {
      w.idle += dt;
      return;
    }
    const own = label(node);
    w.self.set(own, (w.self.get(own) ?? 0) + dt);
    const seen = new Set<string>();
    for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) {
      const l = label(byId.get(x)!);
      if (seen.has(l)) continue;
      seen.add(l);
      w.incl.set(l, (w.incl.get(l) ?? 0) + dt);
    }
  });
  console.log(`\n=== ${file}`);
  for (const w of windows) {
    if (w.total === 0) continue;
    const busy = w.total - w.idle;
    console.log(`\n--- ${w.name}: ${(w.total / 1e6).toFixed(1)} s, busy ${((100 * busy) / w.total).toFixed(0)}%`);
    const top = (m: Map<string, number>) =>
      [...m.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, args.top)
        .map(([k, v]) => `  ${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}`)
        .join('\n');
    console.log(`self (share of busy time):\n${top(w.self)}`);
    console.log(`inclusive:\n${top(w.incl)}`);
  }
}
