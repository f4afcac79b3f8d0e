import { describe, test } from 'node:test';
import { assertLinearOnWorstCases } from '../../platform/text-worst-cases.ts';
import { capChars, normalizeText, parseCsv, sniffDelimiter, stripMarkdown } from './index.ts';

describe('text extraction work', () => {
  test('normalizeText is linear in its input, whatever the characters', () => {
    assertLinearOnWorstCases(normalizeText);
  });

  test('capChars is linear in its input, whatever the characters', () => {
    assertLinearOnWorstCases((text) => capChars(text, text.length - 10));
  });

  test('parseCsv and sniffDelimiter are linear in their input, whatever the characters', () => {
    assertLinearOnWorstCases((text) => parseCsv(text, sniffDelimiter(text)));
  });

  test('stripMarkdown is linear in its input, whatever the characters', () => {
    assertLinearOnWorstCases(stripMarkdown);
  });
});
