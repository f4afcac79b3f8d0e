/**
 * A process's anonymous memory by kind of mapping, from /proc/PID/smaps: which mapping grows is
 * what tells the allocator's own memory (glibc's brk heap and its 64 MiB arenas) from big blocks
 * mapped on their own (ONNX Runtime's, V8's pages) and thread stacks. Used by the soak's `--smaps`.
 */
import { readFile } from 'node:fs/promises';

export interface Mapping {
  start: bigint;
  end: bigint;
  perms: string;
  name: string;
  /** Anonymous kB resident (the part RssAnon counts). */
  anonKb: number;
  hugeKb: number;
}

export type MappingKind = 'brk heap' | 'glibc arenas' | 'thread stacks' | 'anon >=32M' | 'anon 1-32M' | 'anon <1M' | 'files+other';
export const KINDS: MappingKind[] = ['brk heap', 'glibc arenas', 'thread stacks', 'anon >=32M', 'anon 1-32M', 'anon <1M', 'files+other'];

const HEADER = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s*(.*)$/;
const MiB = 1n << 20n;
/** glibc's non-main arenas are heaps of HEAP_MAX_SIZE (64 MiB on 64-bit), aligned to it: a used rw part, the rest reserved ---p. */
const ARENA = 64n * MiB;

export function parseSmaps(text: string): Mapping[] {
  const out: Mapping[] = [];
  let cur: Mapping | undefined;
  for (const line of text.split('\n')) {
    const h = HEADER.exec(line);
    if (h) {
      cur = { start: BigInt(`0x${h[1]}`), end: BigInt(`0x${h[2]}`), perms: h[3], name: h[4].trim(), anonKb: 0, hugeKb: 0 };
      out.push(cur);
    } else if (cur && line.startsWith('Anonymous:')) cur.anonKb = Number(line.slice(10).trim().split(' ')[0]);
    else if (cur && line.startsWith('AnonHugePages:')) cur.hugeKb = Number(line.slice(14).trim().split(' ')[0]);
  }
  return out;
}

/** The kind of each mapping, using its neighbours: an arena's rw part starts on a 64 MiB boundary and its ---p rest ends on the next; a thread stack sits right above a ---p guard page. */
export function classify(maps: Mapping[]): MappingKind[] {
  return maps.map((m, i) => {
    if (m.name === '[heap]') return 'brk heap';
    if (m.name === '[stack]') return 'thread stacks';
    if (m.name !== '' && !m.name.startsWith('[anon')) return 'files+other';
    const size = m.end - m.start;
    const next = maps[i + 1];
    const prev = maps[i - 1];
    if (m.start % ARENA === 0n && (size === ARENA || (next && next.start === m.end && next.perms.startsWith('---') && next.end - m.start === ARENA))) return 'glibc arenas';
    if (prev && prev.end === m.start && prev.perms.startsWith('---') && prev.end - prev.start <= 64n * 1024n && m.perms.startsWith('rw') && size >= MiB && size <= 16n * MiB)
      return 'thread stacks';
    if (size >= 32n * MiB) return 'anon >=32M';
    if (size >= MiB) return 'anon 1-32M';
    return 'anon <1M';
  });
}

export interface Breakdown {
  /** MB of anonymous memory per kind. */
  byKind: Record<MappingKind, number>;
  totalMb: number;
  hugeMb: number;
  /** Anonymous kB by mapping start, to find the mappings that grew between two samples. */
  byStart: Map<bigint, { kb: number; kind: MappingKind; sizeMb: number }>;
}

export async function smapsBreakdown(pid: number): Promise<Breakdown> {
  const maps = parseSmaps(await readFile(`/proc/${pid}/smaps`, 'utf8'));
  const kinds = classify(maps);
  const byKind = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<MappingKind, number>;
  const byStart: Breakdown['byStart'] = new Map();
  let hugeKb = 0;
  maps.forEach((m, i) => {
    byKind[kinds[i]] += m.anonKb / 1024;
    hugeKb += m.hugeKb;
    if (m.anonKb > 0) byStart.set(m.start, { kb: m.anonKb, kind: kinds[i], sizeMb: Number(m.end - m.start) / 2 ** 20 });
  });
  const totalMb = Object.values(byKind).reduce((a, b) => a + b, 0);
  return { byKind, totalMb, hugeMb: hugeKb / 1024, byStart };
}

/** One line: MB per kind. */
export const formatBreakdown = (b: Breakdown): string => `${KINDS.map((k) => `${k} ${b.byKind[k].toFixed(1)}`).join(', ')}; THP ${b.hugeMb.toFixed(1)}`;

/** The mappings whose anonymous memory grew most from `a` to `b` (new mappings count from zero), largest first. */
export function topGrowth(a: Breakdown, b: Breakdown, n: number): string[] {
  const rows = [...b.byStart].map(([start, m]) => ({ start, m, grew: (m.kb - (a.byStart.get(start)?.kb ?? 0)) / 1024 }));
  const gone = [...a.byStart].filter(([s]) => !b.byStart.has(s)).reduce((t, [, m]) => t + m.kb / 1024, 0);
  return [
    ...rows
      .sort((x, y) => y.grew - x.grew)
      .slice(0, n)
      .map((r) => `  ${r.start.toString(16)} ${r.m.kind} (mapping ${r.m.sizeMb.toFixed(1)} MB): ${r.grew >= 0 ? '+' : ''}${r.grew.toFixed(1)} MB, now ${(r.m.kb / 1024).toFixed(1)}${a.byStart.has(r.start) ? '' : ' (new)'}`),
    `  mappings gone since: ${gone.toFixed(1)} MB`,
  ];
}
