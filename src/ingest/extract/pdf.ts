/** PDF: text of the first limits.maxPages pages (unpdf, i.e. pdf.js), after its streams' expansion is counted. */
import type { getDocumentProxy } from 'unpdf';
import { lazyImport } from '../../platform/lazy-import.ts';
import { pdfExpandedBytes } from './pdf-expansion.ts';
import { normalizeText } from './text.ts';
import { expandsTooMuch, textTooLong, unreadable, type FormatExtractor } from './types.ts';

const loadUnpdf = lazyImport(() => import('unpdf'));

interface PdfTextItem {
  str?: string;
  hasEOL?: boolean;
}

export const extractPdf: FormatExtractor = async (bytes, limits) => {
  if (((await pdfExpandedBytes(bytes, limits.maxExpandedBytes)) ?? 0) > limits.maxExpandedBytes) {
    throw expandsTooMuch("the PDF's compressed content", limits.maxExpandedBytes);
  }
  const unpdf = await loadUnpdf();
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // A copy: pdf.js may take over (detach) the buffer it is given.
    pdf = await unpdf.getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, stopAtErrors: false, isEvalSupported: false });
  } catch (e) {
    const name = (e as { name?: string } | null)?.name;
    if (name === 'PasswordException') throw unreadable('the PDF is encrypted (password protected)', e);
    throw unreadable(`not a readable PDF: ${(e as Error)?.message ?? String(e)}`, e);
  }
  try {
    const totalPages = pdf.numPages;
    const wanted = Math.min(totalPages, limits.maxPages);
    const texts: string[] = [];
    let chars = 0;
    let read = 0;
    for (let n = 1; n <= wanted && chars <= limits.maxChars; n++) {
      if (n > 1) await new Promise<void>((resolve) => setImmediate(resolve)); // let other requests run between pages
      let pageText: string;
      try {
        const page = await pdf.getPage(n);
        const content = await page.getTextContent();
        pageText = (content.items as PdfTextItem[]).map((it) => (it.str ?? '') + (it.hasEOL ? '\n' : '')).join('');
        page.cleanup();
      } catch (e) {
        if (n === 1) throw unreadable(`not a readable PDF: ${(e as Error)?.message ?? String(e)}`, e);
        break; // damaged later pages: keep what was read
      }
      texts.push(pageText);
      chars += pageText.length;
      read = n;
    }
    const text = normalizeText(texts.join('\n\n'));
    // Pages left unread because the characters ran out make the file too long as well.
    if (text.length > limits.maxChars || (chars > limits.maxChars && read < wanted)) throw textTooLong(limits.maxChars);
    const truncated = read < totalPages;
    const method = truncated ? `pdf:unpdf (first ${read} of ${totalPages} pages)` : 'pdf:unpdf';
    return { text, method, pages: read, totalPages, ...(truncated ? { truncated } : {}) };
  } finally {
    await pdf.destroy().catch(() => undefined);
  }
};
