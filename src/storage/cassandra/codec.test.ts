import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import cassandra from 'cassandra-driver';
import { toCqlVector } from './codec.ts';

describe('cassandra codec', () => {
  it('encodes a vector as the driver does: D big-endian float32s, each component exact', () => {
    const v = Float32Array.of(1, -0.5, 3.4028234663852886e38, 1e-45, 0.1, -0);
    const b = toCqlVector(v);
    assert.equal(b.length, 4 * v.length);
    for (let i = 0; i < v.length; i++) assert.ok(Object.is(b.readFloatBE(4 * i), v[i]), `component ${i}`);
    // The driver's own encoding of the same cell.
    // The driver exports its Encoder without typings.
    const { Encoder } = cassandra as unknown as { Encoder: new (protocolVersion: number, options: object) => { encode(value: unknown, type: unknown): Buffer } };
    const encoder = new Encoder(5, {});
    const vectorType = { code: cassandra.types.dataTypes.custom, info: [{ code: cassandra.types.dataTypes.float }, v.length], customTypeName: 'vector' };
    assert.deepEqual(b, encoder.encode(new cassandra.types.Vector(v, 'float'), vectorType));
    // A view into a larger buffer (as a query vector may be) encodes only its own components.
    const big = Float32Array.of(9, 1, 2, 9);
    assert.deepEqual(toCqlVector(big.subarray(1, 3)), toCqlVector(Float32Array.of(1, 2)));
  });
});
