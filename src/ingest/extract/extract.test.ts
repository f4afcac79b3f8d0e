import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ServiceError } from '../../errors.ts';
import { detectType } from '../detect.ts';
import { extractText, flattenJson, normalizeText, parseCsv, type ExtractLimits } from './index.ts';
import { lieAboutSize, makeDocx, makePdf, makeZipBomb } from '../fixtures.ts';

const MiB = 1 << 20;
const LIMITS: ExtractLimits = { maxChars: 1_000_000, maxPages: 100, maxExpandedBytes: 10 * MiB };
const SENTENCE = 'The lighthouse keeper logged every passing ship in a blue notebook.';

const failsWith = (c: string, pathMsg?: RegExp) => (e: unknown) => {
  assert.ok(e instanceof ServiceError, `expected a ServiceError, got ${String(e)}`);
  assert.equal(e.code, c, e.message);
  if (pathMsg) {
    assert.equal(e.errors?.[0]?.path, '/file');
    assert.match(e.errors![0].message, pathMsg);
  }
  return true;
};

async function extract(bytes: Buffer, name: string, limits = LIMITS) {
  return extractText(bytes, detectType(bytes, name), limits);
}

describe('extractText', () => {
  test('pdf (pdf-lib, Helvetica): every page, page count', async () => {
    const pdf = await makePdf([['Introduction.', SENTENCE], ['Second page text.'], ['Third page: the end.']]);
    const out = await extract(pdf, 'a.pdf');
    assert.equal(out.method, 'pdf:unpdf');
    assert.equal(out.pages, 3);
    assert.ok(out.text.includes(SENTENCE), out.text);
    assert.ok(out.text.includes('Third page: the end.'));
    assert.equal(out.truncated, undefined);
  });

  test('pdf: only the first maxPages pages are read, and that is said', async () => {
    const pdf = await makePdf(Array.from({ length: 5 }, (_, i) => [`This is page number ${i + 1}.`]));
    const out = await extract(pdf, 'a.pdf', { ...LIMITS, maxPages: 2 });
    assert.equal(out.pages, 2);
    assert.equal(out.totalPages, 5);
    assert.equal(out.truncated, true);
    assert.match(out.method, /first 2 of 5 pages/);
    assert.ok(out.text.includes('page number 2') && !out.text.includes('page number 3'));
  });

  test('corrupt PDFs: validation_failed', async () => {
    const good = await makePdf([[SENTENCE]]);
    await assert.rejects(extract(good.subarray(0, Math.floor(good.length / 3)), 'a.pdf'), failsWith('validation_failed', /PDF/));
    const garbage = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.from('this is not a pdf at all '.repeat(40))]);
    await assert.rejects(extract(garbage, 'a.pdf'), failsWith('validation_failed', /PDF/));
  });

  test('pdf without text: validation_failed "no text"', async () => {
    const empty = await makePdf([[]]);
    await assert.rejects(extract(empty, 'a.pdf'), failsWith('validation_failed', /no text/));
  });

  test('docx (docx package): heading and paragraphs as paragraphs', async () => {
    const docx = await makeDocx('Quarterly report', [SENTENCE, 'Revenue grew by 12 percent.']);
    const out = await extract(docx, 'report.docx');
    assert.equal(out.method, 'docx:mammoth');
    assert.equal(out.text, `Quarterly report\n\n${SENTENCE}\n\nRevenue grew by 12 percent.`);
  });

  test('zip bomb disguised as docx: refused from the central directory, never inflated', async () => {
    const bomb = await makeZipBomb(50); // 50 MiB of zeros in ~50 KiB
    assert.ok(bomb.length < 200 * 1024);
    global.gc?.();
    const before = process.memoryUsage().rss;
    await assert.rejects(extract(bomb, 'innocent.docx', { ...LIMITS, maxExpandedBytes: 10 * MiB }), failsWith('validation_failed', /zip bomb/));
    const grew = process.memoryUsage().rss - before;
    assert.ok(grew < 10 * MiB, `rss grew by ${(grew / MiB).toFixed(1)} MiB`);
  });

  test('a zip that lies about its sizes is caught while streaming, without memory growth', async () => {
    const liar = lieAboutSize(await makeZipBomb(30), 'word/document.xml', 100_000);
    const before = process.memoryUsage().rss;
    await assert.rejects(extract(liar, 'x.docx'), failsWith('validation_failed', /too many bytes/));
    const grew = process.memoryUsage().rss - before;
    assert.ok(grew < 10 * MiB, `rss grew by ${(grew / MiB).toFixed(1)} MiB`);
  });

  test('an honest docx bigger than maxExpandedBytes: payload_too_large', async () => {
    const words = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike'.split(' ');
    let s = 7;
    const para = (i: number) =>
      Array.from({ length: 60 }, () => words[(s = (s * 1103515245 + 12345) >>> 0) % words.length]).join(' ') + ` ${i}.`;
    const docx = await makeDocx('Big', Array.from({ length: 400 }, (_, i) => para(i)));
    await assert.rejects(extract(docx, 'big.docx', { ...LIMITS, maxExpandedBytes: 64 * 1024 }), failsWith('payload_too_large', /expands to/));
    const ok = await extract(docx, 'big.docx');
    assert.ok(ok.text.includes('399.'));
  });

  test('corrupt docx: validation_failed', async () => {
    const docx = await makeDocx('T', [SENTENCE]);
    await assert.rejects(extract(docx.subarray(0, docx.length - 200), 'x.docx'), failsWith('validation_failed', /Word/));
  });

  test('html: text of headings and paragraphs, no links, images, scripts or styles', async () => {
    const html = `<!doctype html><html><head><title>T</title><style>p { color: red }</style><script>alert(1)</script></head>
      <body><h1>Harbour news</h1><p>${SENTENCE.replace('blue', '<b>blue</b>')}</p>
      <p>See <a href="https://example.com/x">the archive</a> <img src="x.png" alt="a picture">today.</p></body></html>`;
    const out = await extract(Buffer.from(html), 'page.html');
    assert.equal(out.method, 'html:html-to-text');
    assert.equal(out.text, `Harbour news\n\n${SENTENCE}\n\nSee the archive today.`);
  });

  test('json: path: value lines, strings searchable, records separated', async () => {
    const doc = { title: 'Ship log', entries: [{ note: SENTENCE, day: 3 }, { note: 'Fog all day.', ok: true }], meta: { empty: null } };
    const out = await extract(Buffer.from(JSON.stringify(doc)), 'log.json');
    assert.equal(out.method, 'json:flatten');
    assert.equal(
      out.text,
      ['title: Ship log', `entries[0].note: ${SENTENCE}`, 'entries[0].day: 3', 'entries[1].note: Fog all day.', 'entries[1].ok: true', 'meta.empty: null'].join('\n'),
    );
    const arr = await extract(Buffer.from('[{"a":"x"},{"a":"y"}]'), 'a.json');
    assert.equal(arr.text, 'a: x\n\na: y');
    // Deep nesting does not overflow the stack.
    const deep = '['.repeat(100_000) + '"deep"' + ']'.repeat(100_000);
    assert.match((await extract(Buffer.from(deep), 'deep.json')).text, /deep$/);
  });

  test('csv: quoted fields with commas, quotes and line breaks; header rows become key: value', async () => {
    const csv = 'name,comment,score\r\n"Smith, Ann","She said ""hi""\nand left",7\r\nBob,' + `"${SENTENCE}"` + ',\r\n';
    const out = await extract(Buffer.from(csv), 'people.csv');
    assert.equal(out.method, 'csv:rfc4180+header');
    assert.equal(out.text, `name: Smith, Ann, comment: She said "hi" and left, score: 7\nname: Bob, comment: ${SENTENCE}`);
    const noHeader = await extract(Buffer.from('1,2,3\n4,"5,5",6\n'), 'n.csv');
    assert.equal(noHeader.method, 'csv:rfc4180');
    assert.equal(noHeader.text, '1, 2, 3\n4, 5,5, 6');
    const tsv = await extract(Buffer.from('city\tcountry\nOslo\tNorway\n'), 'c.tsv');
    assert.equal(tsv.text, 'city: Oslo, country: Norway');
  });

  test('parseCsv: RFC 4180 edge cases', () => {
    assert.deepEqual(parseCsv('a,"b\r\nc",d\r\n,,\r\n"""q"""'), [['a', 'b\r\nc', 'd'], ['', '', ''], ['"q"']]);
    assert.deepEqual(parseCsv('x,"unterminated\nrest'), [['x', 'unterminated\nrest']]);
    assert.deepEqual(parseCsv('a\n\r\n\rb\n'), [['a'], [''], [''], ['b']], 'blank lines stay records of one empty field');
    assert.deepEqual(parseCsv('a"b,c'), [['a"b', 'c']]);
  });

  test('markdown: markup stripped lightly, headings as paragraphs', async () => {
    const md = `# Harbour *news*\nIntro with a [link](https://example.com) and \`code\`.\n\n- item **one**\n- item two\n\n> ${SENTENCE}\n\n![alt text](x.png)\n`;
    const out = await extract(Buffer.from(md), 'news.md');
    assert.equal(out.method, 'md:strip');
    assert.equal(out.text, `Harbour news\n\nIntro with a link and code.\n\n- item one\n- item two\n\n${SENTENCE}\n\nalt text`);
  });

  test('txt: whitespace normalised, paragraphs kept', async () => {
    const out = await extract(Buffer.from('  One\t\ttwo  \r\nthree\r\n\r\n\r\n\r\nFour.  '), 'a.bin');
    assert.equal(out.text, 'One two\nthree\n\nFour.');
  });

  test('text longer than maxChars is refused in every format, naming /file and the limit; at the limit it is kept whole', async () => {
    const tooLong = failsWith('payload_too_large', /longer than the limit of 100 characters/);
    const words = 'word '.repeat(40); // 199 characters once normalised
    await assert.rejects(extract(Buffer.from(words), 'a.txt', { ...LIMITS, maxChars: 100 }), tooLong);
    await assert.rejects(extract(Buffer.from(`# T\n\n${words}`), 'a.md', { ...LIMITS, maxChars: 100 }), tooLong);
    await assert.rejects(extract(Buffer.from(`<html><body><p>${words}</p></body></html>`), 'a.html', { ...LIMITS, maxChars: 100 }), tooLong);
    await assert.rejects(extract(Buffer.from(JSON.stringify({ a: words })), 'a.json', { ...LIMITS, maxChars: 100 }), tooLong);
    await assert.rejects(extract(Buffer.from(`name,text\n${Array.from({ length: 20 }, (_, i) => `n${i},${words.slice(0, 30)}`).join('\n')}`), 'a.csv', { ...LIMITS, maxChars: 100 }), tooLong);
    await assert.rejects(extract(await makePdf([[words]]), 'a.pdf', { ...LIMITS, maxChars: 100 }), tooLong);
    await assert.rejects(extract(await makeDocx('Title', [words]), 'a.docx', { ...LIMITS, maxChars: 100 }), tooLong);
    const atLimit = await extract(Buffer.from('x'.repeat(100)), 'a.txt', { ...LIMITS, maxChars: 100 });
    assert.equal(atLimit.text.length, 100);
    assert.equal(atLimit.truncated, undefined);
  });

  test('text with no extractable text: validation_failed', async () => {
    await assert.rejects(extract(Buffer.from('<html><body><img src="a.png"></body></html>'), 'a.html'), failsWith('validation_failed', /no text/));
    await assert.rejects(extract(Buffer.from('{}'), 'a.json'), failsWith('validation_failed', /no text/));
  });

  test('hostile text stays linear: deep HTML refused fast, pathological Markdown and CSV quick', async () => {
    const t0 = performance.now();
    await assert.rejects(extract(Buffer.from('<div>'.repeat(300_000) + 'x'), 'a.html'), failsWith('validation_failed', /nested too deeply/));
    assert.ok(performance.now() - t0 < 2000);
    const N = 400_000;
    for (const md of ['!['.repeat(N), '['.repeat(N), '**a '.repeat(N / 4), '*a '.repeat(N / 3), '# ' + ' #'.repeat(N / 2) + 'x', '<a '.repeat(N / 3), '[a]('.repeat(N / 4)]) {
      const t = performance.now();
      await extract(Buffer.from(md), 'a.md');
      assert.ok(performance.now() - t < 2000, `${md.slice(0, 8)}…: ${(performance.now() - t).toFixed(0)} ms`);
    }
    const t = performance.now();
    await extract(Buffer.from('"'.repeat(N)), 'a.csv');
    assert.ok(performance.now() - t < 2000);
  });

  test('helpers', () => {
    assert.equal(normalizeText('a\u00a0 b\u200b\n \n\n\nc'), 'a b\n\nc');
    // What is stored must be what was embedded: no lone surrogates (they have no UTF-8 form).
    assert.equal(normalizeText('x\ud800 y \udc00'), 'x\ufffd y \ufffd');
    assert.equal(flattenJson({ a: 'x'.repeat(50), b: 'y' }, 10).truncated, true);
  });
});
