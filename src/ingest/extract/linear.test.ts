import { describe, test } from 'node:test';
import { assertLinearOnWorstCases } from '../../platform/text-worst-cases.ts';
import { normalizeText, parseCsv, sniffDelimiter, stripMarkdown } from './index.ts';

describe('text extraction work', () => {
  test('normalizeText is linear in its input, whatever the characters', () => {
    assertLinearOnWorstCases(normalizeText);
  });

  test('parseCsv and sniffDelimiter are linear in their input, whatever the characters', () => {
    assertLinearOnWorstCases((text) => parseCsv(text, sniffDelimiter(text)));
  });

  test('stripMarkdown is linear in its input, whatever the characters', () => {
    assertLinearOnWorstCases(stripMarkdown);
  });
});
