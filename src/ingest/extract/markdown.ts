/** Markdown: markup stripped lightly (stripMarkdown), the text kept. */
import { finish, readText } from './text.ts';
import type { FormatExtractor } from './types.ts';

/** Removes trailing spaces, tabs and closing #s of an ATX heading (a loop: no regex backtracking). */
function headingText(line: string): string {
  let end = line.length;
  while (end > 0 && /[ \t#]/.test(line[end - 1])) end--;
  return line.slice(0, end);
}

/**
 * Light Markdown to text: headings become their own paragraphs; link targets, emphasis, code
 * fences and HTML tags go. Every pattern's inner run stops at its own delimiter, so the work is
 * linear in the input however hostile it is (no quadratic backtracking).
 */
export function stripMarkdown(md: string): string {
  return md
    .replace(/\r\n?/g, '\n')
    .replace(/^[ \t]*(?:```|~~~).*$/gm, '') // code fences (the code stays)
    .replace(/^[ \t]*#{1,6}[ \t]+(.*)$/gm, (_, h: string) => `\n${headingText(h)}\n`) // ATX headings
    .replace(/^(.+)\n[ \t]*(?:=+|-+)[ \t]*$/gm, '\n$1\n') // setext headings
    .replace(/^[ \t]*(?:[-*_][ \t]*){3,}$/gm, '') // rules
    .replace(/^[ \t]*(?:\|[ \t]*)?:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*(?:\|[ \t]*)?$/gm, '') // table alignment rows
    .replace(/^[ \t]*\[[^[\]\n]+\]:[ \t]+\S.*$/gm, '') // link reference definitions
    .replace(/!\[([^[\]\n]*)\]\([^()\n]*\)/g, '$1') // images: alt text
    .replace(/\[([^[\]\n]+)\]\([^()\n]*\)/g, '$1') // links: their text
    .replace(/\[([^[\]\n]+)\]\[[^[\]\n]*\]/g, '$1') // reference links
    .replace(/<((?:https?|mailto):[^<>\s]+)>/g, '$1') // autolinks
    .replace(/<\/?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?>/g, '') // inline HTML tags
    .replace(/\*\*(?=[^\s*])([^*\n]*[^*\s])\*\*/g, '$1') // **bold**
    .replace(/__(?=[^\s_])([^_\n]*[^_\s])__/g, '$1') // __bold__
    .replace(/(^|[^\w*])\*(?=[^\s*])([^*\n]*[^*\s])\*(?![\w*])/g, '$1$2') // *emphasis*
    .replace(/(^|[^\w_])_(?=[^\s_])([^_\n]*[^_\s])_(?![\w_])/g, '$1$2') // _emphasis_
    .replace(/~~(?=[^\s~])([^~\n]*[^~\s])~~/g, '$1') // strike-through
    .replace(/`{1,3}([^`\n]+)`{1,3}/g, '$1') // inline code
    .replace(/^[ \t]{0,3}>[ \t]?/gm, '') // block quotes
    .replace(/^([ \t]*)[*+][ \t]+/gm, '$1- '); // list bullets
}

export const extractMarkdown: FormatExtractor = async (bytes, limits) => {
  const { text, truncated } = readText(bytes, limits);
  return finish(stripMarkdown(text), 'md:strip', limits, truncated);
};

/** Plain text: only normalised. */
export const extractPlain: FormatExtractor = async (bytes, limits) => {
  const { text, truncated } = readText(bytes, limits);
  return finish(text, 'txt:plain', limits, truncated);
};
