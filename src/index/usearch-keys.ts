/**
 * usearch's result keys (a BigUint64Array) as plain numbers, without a BigInt per key. Reading a
 * BigUint64Array element makes a BigInt on the heap, 100 of them a graph walk: in the search worker
 * that was most of what it allocated, a scavenge every ~36 searches at 1M rows (a throwaway probe,
 * 3,000 walks of one graph: 33 scavenges converting with Number(), 6 reading the words, 4 with no
 * conversion). Keys are row ids, below 2^53.
 */
import os from 'node:os';

/** Which 32-bit word of a u64 holds its low half on this machine. */
const LOW = os.endianness() === 'LE' ? 0 : 1;

export function keysAsNumbers(keys: BigUint64Array): Float64Array {
  const words = new Uint32Array(keys.buffer, keys.byteOffset, keys.length * 2);
  const out = new Float64Array(keys.length);
  for (let i = 0; i < out.length; i++) out[i] = words[2 * i + LOW] + words[2 * i + 1 - LOW] * 4294967296;
  return out;
}
