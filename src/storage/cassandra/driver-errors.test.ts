import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import cassandra from 'cassandra-driver';
import { translateDriverError } from './driver-errors.ts';

const { errors, types } = cassandra;
const codes = types.responseErrorCodes;
const HOST = '10.20.30.40';

/** Driver errors as the driver builds them, each naming a host, a port or the cluster's own words. */
function refused(): Error {
  return Object.assign(new Error(`connect ECONNREFUSED ${HOST}:9042`), { code: 'ECONNREFUSED', address: HOST, port: 9042, syscall: 'connect' });
}

describe('translateDriverError', () => {
  const cases: { name: string; err: Error; code: string; says?: RegExp; hidden: string[] }[] = [
    { name: 'no host available', err: new errors.NoHostAvailableError({ [`${HOST}:9042`]: refused() }), code: 'storage_unavailable', says: /unreachable while searching/, hidden: [HOST, '9042', 'ECONNREFUSED', 'host(s) tried'] },
    { name: 'client-side timeout', err: new errors.OperationTimedOutError(`The host ${HOST}:9042 did not reply before timeout 12000 ms`, `${HOST}:9042`), code: 'storage_unavailable', hidden: [HOST, '12000'] },
    { name: 'read timeout', err: new errors.ResponseError(codes.readTimeout, `Operation timed out - received only 0 responses from ${HOST}.`), code: 'storage_unavailable', says: /\(readTimeout\)/, hidden: [HOST, 'received only'] },
    { name: 'unavailable', err: new errors.ResponseError(codes.unavailableException, 'Cannot achieve consistency level QUORUM'), code: 'storage_unavailable', hidden: ['QUORUM'] },
    { name: 'syntax error', err: new errors.ResponseError(codes.syntaxError, "line 1:7 no viable alternative at input 'FROM' (SELECT [FROM] secret_table...)"), code: 'internal', hidden: ['secret_table', 'viable'] },
    { name: 'socket error', err: refused(), code: 'storage_unavailable', hidden: [HOST, '9042'] },
    { name: 'anything else', err: new Error(`unexpected frame from ${HOST}:9042`), code: 'internal', hidden: [HOST, 'frame'] },
  ];
  for (const c of cases) {
    it(`answers ${c.name} as ${c.code} without the driver's text, keeping it as the cause`, () => {
      const se = translateDriverError(c.err, { action: 'searching', keyspace: 'ks' });
      assert.equal(se.code, c.code);
      for (const h of c.hidden) assert.ok(!se.message.includes(h), `"${se.message}" shows ${h}`);
      if (c.says) assert.match(se.message, c.says);
      assert.equal(se.cause, c.err);
    });
  }

  it('still tells missing keyspaces and tables apart by name only', () => {
    const ks = translateDriverError(new errors.ResponseError(codes.invalid, 'Keyspace vss_ab12_ks does not exist'), { keyspace: 'ks' });
    assert.deepEqual([ks.code, ks.message], ['keyspace_not_found', 'Keyspace "ks" does not exist.']);
    const t = translateDriverError(new errors.ResponseError(codes.invalid, 'unconfigured table vectors_3'), { keyspace: 'ks', table: 't' });
    assert.deepEqual([t.code, t.message], ['table_not_found', 'Table "t" does not exist in keyspace "ks".']);
  });
});
