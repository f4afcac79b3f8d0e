import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileFilter } from '../../index/filter.ts';
import type { Filter, Metadata } from '../api.ts';
import { filterQuery, MAX_BRANCHES, metadataTerms } from './filter-terms.ts';

/** What a row set matches by terms: every term of some branch present. */
function matchesByTerms(m: Metadata, filter: Filter): boolean {
  const q = filterQuery(filter);
  if ('unservable' in q) throw new Error('unservable');
  const terms = new Set(metadataTerms(m));
  return q.branches.some((b) => b.every((t) => terms.has(t)));
}

describe('filter terms (metadata as SAI terms, filters as unions of conjunctions)', () => {
  const docs: Metadata[] = [
    { a: 1, tag: 'x', nested: { b: true } },
    { a: 1.0, tag: ['x', 'y'], 'nested.b': true },
    { a: '1', tag: 'y', nested: { b: false } },
    { a: 2, tags: [], nested: null },
    { long: 'z'.repeat(5000), a: null },
    {},
  ];
  const servable: Filter[] = [
    { a: 1 },
    { a: '1' },
    { tag: 'x' },
    { tag: { $in: ['y', 'q'] } },
    { 'nested.b': true },
    { nested: { $exists: true } },
    { a: 1, tag: 'y' },
    { $or: [{ a: 2 }, { tag: 'y', a: { $eq: '1' } }] },
    { $and: [{ a: { $in: [1, 2] } }, { tag: { $in: ['x', 'y'] } }] },
    { long: 'z'.repeat(5000) },
  ];

  for (const f of servable) {
    it(`agrees with the in-memory matcher: ${JSON.stringify(f).slice(0, 80)}`, () => {
      const match = compileFilter(f);
      assert.deepEqual(docs.map((d) => matchesByTerms(d, f)), docs.map((d) => match(d)));
    });
  }

  it('keeps dotted keys apart from nested paths, and types apart', () => {
    assert.notDeepEqual(metadataTerms({ 'a.b': 1 }).sort(), metadataTerms({ a: { b: 1 } }).filter((t) => t.includes('=')).sort());
    assert.equal(matchesByTerms({ a: true }, { a: 1 }), false);
    assert.equal(matchesByTerms({ a: 1 }, { a: '1' }), false);
  });

  it('indexes long strings by their hash: no term above 1 KiB', () => {
    assert.ok(metadataTerms({ s: 'é'.repeat(4000) }).every((t) => Buffer.byteLength(t) < 1024));
  });

  it('names what the index cannot serve', () => {
    for (const [f, path] of [
      [{ a: { $gt: 1 } }, '/filter/a'],
      [{ a: 1, b: { $ne: 2 } }, '/filter/b'],
      [{ 'x.y': { $nin: [1] } }, '/filter/x.y'],
      [{ a: null }, '/filter/a'],
      [{ c: { $exists: false } }, '/filter/c'],
      [{ a: { $in: Array.from({ length: MAX_BRANCHES + 1 }, (_, i) => i) } }, '/filter'],
    ] as const) {
      const q = filterQuery(f as Filter);
      assert.ok('unservable' in q, JSON.stringify(f));
      assert.equal(q.unservable.path, path);
    }
  });
});
