import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertLinearOnWorstCases } from '../platform/text-worst-cases.ts';
import { splitSentences } from './sentences.ts';

describe('splitSentences', () => {
  const cases: [what: string, text: string, sentences: string[]][] = [
    ['splits on sentence ends and paragraphs', 'One sentence here. Another one! A third?\n\nNew paragraph without end', ['One sentence here.', 'Another one!', 'A third?', 'New paragraph without end']],
    ['splits on list items and drops a fragment of fewer than three letters', 'Intro line\n- first item\n- second item\n\n12', ['Intro line', '- first item', '- second item']],
    ['keeps a decimal number and a lower-case continuation whole', 'Version 2.5 is out. it continues lower-case.', ['Version 2.5 is out. it continues lower-case.']],
    [
      'ends a sentence after closing quotes and brackets, before an opening quote and a capital or digit',
      'He said "stop here." Then he left. (It rained.) "Why?" she asked. 3 days passed.',
      ['He said "stop here."', 'Then he left.', '(It rained.)', '"Why?" she asked.', '3 days passed.'],
    ],
    ['splits after CJK full stops without a space', '今日は良い天気です。明日は雨が降ります！', ['今日は良い天気です。', '明日は雨が降ります！']],
    [
      'starts a paragraph at numbered items and headings, and drops fragments of fewer than three letters',
      'Steps to follow\n1. open the lid\n2) pour the water\n# Notes\n  > quoted line\n\n\n42 !',
      ['Steps to follow', '1. open the lid', '2) pour the water', '# Notes', '> quoted line'],
    ],
  ];
  for (const [what, text, sentences] of cases) {
    it(what, () => assert.deepEqual(splitSentences(text), sentences));
  }

  it('cuts an overlong sentence to 1000 characters', () => {
    const [s] = splitSentences('word '.repeat(500));
    assert.equal(s.length, 1000);
    assert.ok(s.endsWith('…'));
  });

  it('is linear in its input, whatever the characters', () => {
    assertLinearOnWorstCases(splitSentences);
  });
});
