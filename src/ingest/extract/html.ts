/** HTML: html-to-text, after a linear check of how deeply it nests. */
import { lazyImport } from '../../platform/lazy-import.ts';
import { finish, readText } from './text.ts';
import { unreadable, type FormatExtractor } from './types.ts';

const loadHtmlToText = lazyImport(() => import('html-to-text'));

const VOID_OR_SELF_CLOSING = new Set(
  'area base br col embed hr img input link meta source track wbr param keygen p li dt dd tr td th option optgroup rb rt rp'.split(' '),
);
/** Budget for htmlparser2's element stack work (see htmlStackWork): ~0.5 s on the target. */
export const MAX_HTML_STACK_WORK = 1e9;

/**
 * htmlparser2 (under html-to-text) keeps its open elements in an array it unshifts to, so each
 * opening tag costs the current nesting depth: 400 000 unclosed <div>s (2 MB) take ~50 s. This
 * linear pre-scan sums the depth over opening tags (tags with implied or no end tag left out).
 */
export function htmlStackWork(html: string): number {
  const re = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)/g;
  let depth = 0;
  let work = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(html)) !== null) {
    if (VOID_OR_SELF_CLOSING.has(m[2].toLowerCase())) continue;
    if (m[1] === '/') {
      if (depth > 0) depth--;
    } else work += ++depth;
  }
  return work;
}

export const extractHtml: FormatExtractor = async (bytes, limits) => {
  const { text, truncated } = readText(bytes, limits);
  if (htmlStackWork(text) > MAX_HTML_STACK_WORK) throw unreadable('the HTML is nested too deeply to read (unclosed elements)');
  const { convert: htmlToText } = await loadHtmlToText();
  const out = htmlToText(text, {
    wordwrap: false,
    preserveNewlines: false,
    limits: { maxInputLength: text.length + 1, maxDepth: 256, ellipsis: '' },
    selectors: [
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'picture', format: 'skip' },
      { selector: 'svg', format: 'skip' },
      { selector: 'canvas', format: 'skip' },
      { selector: 'video', format: 'skip' },
      { selector: 'audio', format: 'skip' },
      { selector: 'iframe', format: 'skip' },
      { selector: 'object', format: 'skip' },
      { selector: 'noscript', format: 'skip' },
      { selector: 'template', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'button', format: 'skip' },
      { selector: 'select', format: 'skip' },
      ...(['h1', 'h2', 'h3', 'h4', 'h5', 'h6'] as const).map((h) => ({ selector: h, options: { uppercase: false } })),
      { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
    ],
  });
  return finish(out, 'html:html-to-text', limits, truncated);
};
