/** JSON and JSON Lines: one `path: value` line per scalar. */
import { cachedJson, parseJsonText } from '../detect.ts';
import { decodeOrRefuse, finish } from './text.ts';
import { unreadable, type FormatExtractor } from './types.ts';

const MAX_PATH_DEPTH = 32;

/**
 * `path: value` lines for every scalar (document order), e.g. `authors[0].name: Ada`. Top-level
 * array items (and JSON Lines records) are separated by a blank line, their index left out.
 * Iterative (no recursion limit), stops once `maxChars` is reached.
 */
export function flattenJson(value: unknown, maxChars: number): { text: string; truncated: boolean } {
  const lines: string[] = [];
  let chars = 0;
  type Frame = { v: unknown; path: string; depth: number; sep?: boolean };
  const stack: Frame[] = [];
  if (Array.isArray(value)) {
    for (let i = value.length - 1; i >= 0; i--) stack.push({ v: value[i], path: '', depth: 1, sep: i > 0 });
  } else stack.push({ v: value, path: '', depth: 0 });
  while (stack.length > 0) {
    if (chars > maxChars) return { text: lines.join('\n'), truncated: true };
    const { v, path, depth, sep } = stack.pop()!;
    if (sep && lines.length > 0 && lines[lines.length - 1] !== '') lines.push('');
    if (v !== null && typeof v === 'object') {
      const deeper = depth + 1;
      const join = (seg: string, isIndex: boolean): string =>
        depth >= MAX_PATH_DEPTH ? path : isIndex || path === '' ? `${path}${seg}` : `${path}.${seg}`;
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: join(`[${i}]`, true), depth: deeper });
      } else {
        const keys = Object.keys(v);
        for (let i = keys.length - 1; i >= 0; i--) stack.push({ v: (v as Record<string, unknown>)[keys[i]], path: join(keys[i], false), depth: deeper });
      }
      continue;
    }
    const s = v === null ? 'null' : String(v);
    const line = path === '' ? s : `${path}: ${s}`;
    lines.push(line);
    chars += line.length + 1;
  }
  return { text: lines.join('\n'), truncated: false };
}

export const extractJson: FormatExtractor = async (bytes, limits) => {
  const parsed = cachedJson(bytes) ?? parseJsonText(decodeOrRefuse(bytes));
  if (!parsed) throw unreadable('not valid JSON');
  const flat = flattenJson(parsed.value, limits.maxChars);
  return finish(flat.text, 'json:flatten', limits, flat.truncated);
};
