import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type BetterSqlite3 from 'better-sqlite3';
import { Database } from '../storage/embedded/sqlite-driver.ts';
import { compareCodePoints, compileFilter, filterToSql, validateFilter, type Filter } from './filter.ts';

type Doc = Record<string, unknown>;

const DOCS: Doc[] = [
  { id: 0, price: 10, name: 'apple', tags: ['fruit', 'red'], in_stock: true, nested: { a: { b: 1 } } },
  { id: 1, price: 20.5, name: 'banana', tags: ['fruit', 'yellow'], in_stock: false, nested: { a: { b: 2 } } },
  { id: 2, price: '30', name: 'cherry', tags: 'red', in_stock: 1, nested: { a: 'flat' } },
  { id: 3, name: 'date', tags: [], color: null, nested: {} },
  { id: 4, price: null, name: 'Éclair', tags: ['sweet', null, 3], in_stock: true },
  { id: 5, price: -1, name: '😀 smile', tags: [['red']], 'dotted.key': 'yes', 'we"ird': 'q', "it's": 's', 'b\\s': 1 },
  { id: 6 },
  { id: 7, price: 1e3, name: 'zebra', nums: [1, 5, 9], objs: [{ k: 1 }], flag: false },
];

/** [filter, ids expected]: both SQL and JS must give exactly these. */
const CASES: [Filter, number[]][] = [
  [{}, [0, 1, 2, 3, 4, 5, 6, 7]],
  [{ name: 'apple' }, [0]],
  [{ price: 10 }, [0]],
  [{ price: 10.0 }, [0]],
  [{ price: '30' }, [2]],
  [{ price: 30 }, []],
  [{ in_stock: true }, [0, 4]],
  [{ in_stock: 1 }, [2]],
  [{ in_stock: false }, [1]],
  [{ flag: false }, [7]],
  [{ price: null }, [3, 4, 6]],
  [{ color: null }, [0, 1, 2, 3, 4, 5, 6, 7]],
  [{ color: { $eq: null } }, [0, 1, 2, 3, 4, 5, 6, 7]],
  [{ color: { $ne: null } }, []],
  [{ price: { $ne: null } }, [0, 1, 2, 5, 7]],
  [{ tags: 'red' }, [0, 2]],
  [{ tags: { $ne: 'red' } }, [1, 3, 4, 5, 6, 7]],
  [{ tags: null }, [4, 6, 7]],
  [{ tags: 3 }, [4]],
  [{ tags: { $in: ['yellow', 'sweet'] } }, [1, 4]],
  [{ tags: { $nin: ['fruit'] } }, [2, 3, 4, 5, 6, 7]],
  [{ tags: { $in: [] } }, []],
  [{ tags: { $nin: [] } }, [0, 1, 2, 3, 4, 5, 6, 7]],
  [{ price: { $in: [10, '30', null] } }, [0, 2, 3, 4, 6]],
  [{ price: { $nin: [10, 20.5] } }, [2, 3, 4, 5, 6, 7]],
  [{ price: { $gt: 10 } }, [1, 7]],
  [{ price: { $gte: 10 } }, [0, 1, 7]],
  [{ price: { $lt: 10 } }, [5]],
  [{ price: { $lte: 10, $gt: -1 } }, [0]],
  [{ price: { $gt: '2' } }, [2]],
  [{ name: { $gt: 'c' } }, [2, 3, 4, 5, 7]],
  [{ name: { $lt: 'b' } }, [0]],
  [{ name: { $gte: 'Éclair' } }, [4, 5]],
  [{ nums: { $gt: 8 } }, [7]],
  [{ nums: { $lt: 1 } }, []],
  [{ nums: 5 }, [7]],
  [{ price: { $exists: true } }, [0, 1, 2, 4, 5, 7]],
  [{ price: { $exists: false } }, [3, 6]],
  [{ color: { $exists: true } }, [3]],
  [{ 'nested.a.b': 1 }, [0]],
  [{ 'nested.a.b': { $gte: 1 } }, [0, 1]],
  [{ 'nested.a': 'flat' }, [2]],
  [{ 'nested.a': { $exists: true } }, [0, 1, 2]],
  [{ 'nested.a.b': { $exists: false } }, [2, 3, 4, 5, 6, 7]],
  [{ 'objs.k': 1 }, []],
  [{ 'dotted.key': 'yes' }, []],
  [{ 'we"ird': 'q' }, [5]],
  [{ "it's": 's' }, [5]],
  [{ 'b\\s': 1 }, [5]],
  [{ tags: 'sweet', price: null }, [4]],
  [{ $or: [{ name: 'apple' }, { price: { $gt: 100 } }] }, [0, 7]],
  [{ $and: [{ tags: 'fruit' }, { in_stock: false }] }, [1]],
  [{ $or: [{ $and: [{ tags: 'red' }, { price: { $exists: true } }] }, { id: 6 }] }, [0, 2, 6]],
  [{ name: { $in: ['apple', 'zebra'] }, $or: [{ price: 10 }, { price: 1000 }] }, [0, 7]],
  [{ id: { $nin: [0, 1, 2] }, tags: { $exists: true } }, [3, 4, 5]],
];

function sqlIds(db: BetterSqlite3.Database, filter: Filter): number[] {
  const { sql, params } = filterToSql(filter);
  return (db.prepare(`SELECT id FROM docs WHERE ${sql} ORDER BY id`).all(...params) as { id: number }[]).map((r) => r.id);
}

describe('filter', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE docs (id INTEGER PRIMARY KEY, metadata TEXT NOT NULL)');
  const ins = db.prepare('INSERT INTO docs VALUES (?, ?)');
  for (const d of DOCS) ins.run(d.id, JSON.stringify(d));

  for (const [filter, expected] of CASES) {
    it(`SQL and JS agree on ${JSON.stringify(filter)}`, () => {
      assert.deepEqual(validateFilter(filter), []);
      const want = [...expected].sort((a, b) => a - b);
      const js = DOCS.filter((d) => compileFilter(filter)(JSON.parse(JSON.stringify(d)))).map((d) => d.id as number);
      assert.deepEqual(js, want, 'JS');
      assert.deepEqual(sqlIds(db, filter), want, 'SQL');
    });
  }

  it('rejects unknown operators and bad operands with JSON-pointer paths', () => {
    const errs = validateFilter({ price: { $gtx: 1 }, a: { $in: 3 }, b: { $gt: true }, c: [1], $nor: [], d: { $exists: 1 } }, '/filter');
    const paths = errs.map((e) => e.path).sort();
    assert.deepEqual(paths, ['/filter/$nor', '/filter/a/$in', '/filter/b/$gt', '/filter/c', '/filter/d/$exists', '/filter/price/$gtx']);
  });

  it('rejects malformed structures', () => {
    assert.deepEqual(validateFilter([]).map((e) => e.path), ['/filter']);
    assert.deepEqual(validateFilter({ $and: [] }).map((e) => e.path), ['/filter/$and']);
    assert.deepEqual(validateFilter({ $or: [{ a: 1 }, 5] }).map((e) => e.path), ['/filter/$or/1']);
    assert.deepEqual(validateFilter({ a: { b: 1 } }).map((e) => e.path), ['/filter/a']);
    assert.deepEqual(validateFilter({ a: { $eq: 1, b: 2 } }).map((e) => e.path), ['/filter/a']);
    assert.deepEqual(validateFilter({ 'a..b': 1 }).map((e) => e.path), ['/filter/a..b']);
    assert.deepEqual(validateFilter({ 'x/y': { $in: [1, {}] } }).map((e) => e.path), ['/filter/x~1y/$in/1']);
    assert.deepEqual(validateFilter({ a: Number.NaN }).map((e) => e.path), ['/filter/a']);
    let deep: Filter = { a: 1 };
    for (let i = 0; i < 40; i++) deep = { $and: [deep] };
    assert.ok(validateFilter(deep).length > 0);
  });

  it('compares strings by code point like SQLite', () => {
    const a = '\uffff';
    const b = '😀';
    assert.ok(compareCodePoints(a, b) < 0);
    assert.ok(a > b, 'JS compares UTF-16 units the other way');
    const row = db.prepare('SELECT ? < ? AS lt').get(a, b) as { lt: number };
    assert.equal(row.lt, 1);
  });

  it('SQL and JS agree on range bounds past 2^53, whose JSON text is not the double', () => {
    // 2^60 is written "1152921504606847000", which SQLite reads as that integer, not the double.
    const nums = [2 ** 60, -(2 ** 60), 2 ** 53 + 2, 1e19, 1e21, 123456789012345680000, 0.1 + 0.2, 7];
    const big = new Database(':memory:');
    big.exec('CREATE TABLE docs (id INTEGER PRIMARY KEY, metadata TEXT NOT NULL)');
    nums.forEach((n, id) => big.prepare('INSERT INTO docs VALUES (?, ?)').run(id, JSON.stringify({ n, arr: [n] })));
    for (const bound of nums) {
      for (const op of ['$gt', '$gte', '$lt', '$lte']) {
        for (const field of ['n', 'arr']) {
          const f: Filter = { [field]: { [op]: bound } };
          const js = nums.flatMap((n, id) => (compileFilter(f)({ n, arr: [n] }) ? [id] : []));
          assert.deepEqual(sqlIds(big, f), js, JSON.stringify(f));
        }
      }
    }
    big.close();
  });

  it('random filters agree between SQL and JS', () => {
    let seed = 7;
    const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
    const fields = ['price', 'name', 'tags', 'in_stock', 'nested.a.b', 'color', 'nums', 'id'];
    const values = [10, 20.5, '30', 'red', 'apple', true, false, null, 1, 5, -1, 'c'];
    const leaf = (): Filter => {
      const f = pick(fields);
      switch (pick(['eq', 'ne', 'in', 'nin', 'cmp', 'exists'])) {
        case 'eq':
          return { [f]: pick(values) };
        case 'ne':
          return { [f]: { $ne: pick(values) } };
        case 'in':
          return { [f]: { $in: [pick(values), pick(values)] } };
        case 'nin':
          return { [f]: { $nin: [pick(values), pick(values)] } };
        case 'cmp':
          return { [f]: { [pick(['$gt', '$gte', '$lt', '$lte'])]: pick([10, 5, 'b', 'red', 0]) } };
        default:
          return { [f]: { $exists: rnd() < 0.5 } };
      }
    };
    const tree = (depth: number): Filter => (depth === 0 || rnd() < 0.4 ? leaf() : { [pick(['$and', '$or'])]: [tree(depth - 1), tree(depth - 1)] });
    for (let i = 0; i < 300; i++) {
      const f = tree(3);
      assert.deepEqual(validateFilter(f), [], JSON.stringify(f));
      const js = DOCS.filter((d) => compileFilter(f)(JSON.parse(JSON.stringify(d)))).map((d) => d.id as number);
      assert.deepEqual(sqlIds(db, f), js, JSON.stringify(f));
    }
  });
});
