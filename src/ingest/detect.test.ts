import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import JSZip from 'jszip';
import { ServiceError } from '../errors.ts';
import { assertLinearOnWorstCases } from '../platform/text-worst-cases.ts';
import { decodeText, detectType, zipEntryNames } from './detect.ts';
import { makeDocx, makePdf } from './fixtures.ts';

const code = (c: string) => (e: unknown) => e instanceof ServiceError && e.code === c;

describe('detectType', () => {
  test('PDF and DOCX by content, whatever the name', async () => {
    assert.equal(detectType(await makePdf([['Hello.']]), 'photo.png'), 'pdf');
    const docx = await makeDocx('Title', ['Body.']);
    assert.equal(detectType(docx, 'notes.txt'), 'docx');
    assert.ok(zipEntryNames(docx)?.includes('word/document.xml'));
  });

  test('a zip that is not a Word document is unsupported', async () => {
    const zip = new JSZip();
    zip.file('readme.txt', 'hello');
    const bytes = await zip.generateAsync({ type: 'nodebuffer' });
    assert.throws(() => detectType(bytes, 'x.docx'), code('unsupported_media_type'));
  });

  test('binary content is unsupported: PNG, ELF, random bytes, invalid UTF-8', () => {
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(64)]);
    const elf = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(56)]);
    assert.throws(() => detectType(png, 'a.txt'), code('unsupported_media_type'));
    assert.throws(() => detectType(elf, 'a.md'), code('unsupported_media_type'));
    assert.throws(() => detectType(randomBytes(4096), 'a.csv'), code('unsupported_media_type'));
    assert.throws(() => detectType(Buffer.from([0x68, 0x69, 0xff, 0xfe, 0x20, 0xc3]), 'a.txt'), code('unsupported_media_type'));
    const controls = Buffer.from('ab\u0001\u0002\u0003\u0004\u0005cd\u0006\u0007\u0008');
    assert.throws(() => detectType(controls, 'a.txt'), code('unsupported_media_type'));
  });

  test('text that starts like a binary signature, or mentions %PDF- early, is text', async () => {
    const cases: [string, string, string][] = [
      ['SQLite features: transactions, WAL, JSON.', 'notes.md', 'md'],
      ['MZ-80K,Sharp,1978\nPET 2001,Commodore,1977\n', 'computers.csv', 'csv'],
      ['RIFF is a container format.', 'a.txt', 'txt'],
      ['GIF89a added animation.', 'a.txt', 'txt'],
      ['# Formats\n\nA PDF starts with `%PDF-1.7` and ends with an end-of-file marker.', 'formats.md', 'md'],
    ];
    for (const [text, name, type] of cases) assert.equal(detectType(Buffer.from(text), name), type, text);
    // The real formats are still refused or read as what they are.
    for (const bin of [Buffer.concat([Buffer.from('MZ'), Buffer.alloc(64)]), Buffer.concat([Buffer.from('GIF89a'), Buffer.from([1, 0, 1, 0, 0x80, 0, 0])]), Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(84)])]) {
      assert.throws(() => detectType(bin, 'a.txt'), code('unsupported_media_type'));
    }
    const junkFirst = Buffer.concat([Buffer.from('junk before the header\n'), await makePdf([['Hello.']])]);
    assert.equal(detectType(junkFirst, 'a.pdf'), 'pdf');
  });

  test('empty or blank: validation_failed', () => {
    assert.throws(() => detectType(Buffer.alloc(0), 'a.txt'), code('validation_failed'));
    assert.throws(() => detectType(Buffer.from(' \n\t\n'), 'a.txt'), code('validation_failed'));
  });

  test('text kinds: html, json by content; csv and md by name among text', () => {
    const t = (s: string, name: string) => detectType(Buffer.from(s), name);
    assert.equal(t('<!DOCTYPE html><html><body><p>x</p></body></html>', 'page.txt'), 'html');
    assert.equal(t('\n  <html lang="en"><p>x</p></html>', 'page'), 'html');
    assert.equal(t('<div><p>one</p><p>two</p></div>', 'frag.dat'), 'html');
    assert.equal(t('<p>just one tag</p>', 'frag.htm'), 'html');
    assert.equal(t('# Title\n\n<div>inline</div> <p>a</p> <p>b</p>', 'notes.md'), 'md');
    assert.equal(t('{"a": 1, "b": "x"}', 'data.txt'), 'json');
    assert.equal(t('[1, 2, 3]', 'data'), 'json');
    assert.equal(t('{"a":1}\n{"a":2}\n', 'data.jsonl'), 'json');
    assert.equal(t('{"a": broken', 'data.json'), 'txt');
    assert.equal(t('42', 'n.json'), 'txt');
    assert.equal(t('a,b\n1,2\n', 'table.CSV'), 'csv');
    assert.equal(t('a\tb\n1\t2\n', 'table.tsv'), 'csv');
    assert.equal(t('# Title\n\nText.', 'readme.md'), 'md');
    assert.equal(t('# Title\n\nText.', 'readme.markdown'), 'md');
    assert.equal(t('just text', 'program.exe'), 'txt');
    assert.equal(t('a,b\n1,2\n', 'table.txt'), 'txt');
  });

  test('UTF-8 with BOM and UTF-16 with BOM are text', () => {
    assert.equal(detectType(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('héllo')]), 'a.txt'), 'txt');
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('name,value\nä,1\n', 'utf16le')]);
    assert.equal(detectType(le, 'a.csv'), 'csv');
    const be = Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('hello world', 'utf16le').swap16()]);
    assert.equal(detectType(be, 'a.txt'), 'txt');
    assert.equal(decodeText(be), 'hello world');
    assert.equal(decodeText(le), 'name,value\nä,1\n');
  });

  test('is linear in the size of the file, whatever its characters', () => {
    for (const name of ['a.txt', 'a.md', 'a.csv', 'a.html', 'a.json']) {
      assertLinearOnWorstCases((text) => {
        try {
          detectType(Buffer.from(text), name);
        } catch (e) {
          if (!(e instanceof ServiceError)) throw e; // refusing a file is an answer too
        }
      });
    }
  });
});
