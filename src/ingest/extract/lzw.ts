/**
 * PDF's LZWDecode (ISO 32000-1, 7.4.4): codes of 9 to 12 bits, most significant bit first, 256
 * clears the table, 257 ends the data; `earlyChange` (the /EarlyChange parameter, default 1)
 * widens the codes one entry early. Written here, not taken from a parser, so that its output
 * can be counted and dropped as it comes: a 12-bit code can stand for ~3,800 bytes.
 */

/**
 * Decodes `data`, handing each decoded string to `sink` (a view into a reused buffer: copy it to
 * keep it), and stops once more than `cap` bytes have come out. Returns how many did (at most
 * cap + one string). A damaged code ends the data, as pdf.js treats it.
 */
export function lzwDecode(data: Uint8Array, cap: number, earlyChange = 1, sink?: (bytes: Uint8Array) => void): number {
  const prefix = new Int16Array(4096);
  const suffix = new Uint8Array(4096);
  const length = new Uint16Array(4096);
  for (let i = 0; i < 256; i++) {
    prefix[i] = -1;
    suffix[i] = i;
    length[i] = 1;
  }
  const out = new Uint8Array(4096);
  let next = 258;
  let width = 9;
  let prev = -1;
  let bits = 0;
  let buffer = 0;
  let pos = 0;
  let total = 0;
  for (;;) {
    while (bits < width && pos < data.length) {
      buffer = ((buffer << 8) | data[pos++]) >>> 0;
      bits += 8;
    }
    if (bits < width) break;
    bits -= width;
    const code = (buffer >>> bits) & ((1 << width) - 1);
    buffer &= (1 << bits) - 1;
    if (code === 256) {
      next = 258;
      width = 9;
      prev = -1;
      continue;
    }
    if (code === 257) break;
    let n: number;
    if (code < 256 || (code > 257 && code < next)) {
      n = length[code];
      for (let c = code, i = n - 1; i >= 0; i--, c = prefix[c]) out[i] = suffix[c];
    } else if (code === next && prev >= 0) {
      // The string of prev, then its own first byte (the "KwKwK" case).
      n = length[prev] + 1;
      for (let c = prev, i = n - 2; i >= 0; i--, c = prefix[c]) out[i] = suffix[c];
      out[n - 1] = out[0];
    } else break;
    if (prev >= 0 && next < 4096) {
      prefix[next] = prev;
      suffix[next] = out[0];
      length[next] = length[prev] + 1;
      next++;
    }
    prev = code;
    width = Math.min(12, 32 - Math.clz32(next + earlyChange));
    total += n;
    sink?.(out.subarray(0, n));
    if (total > cap) break;
  }
  return total;
}
