/**
 * The client side of `vector_base64`: a vector as its float32 values in little-endian IEEE-754
 * byte order, standard base64 with padding (what numpy's `v.astype('<f4').tobytes()` gives, and
 * OpenAI's embeddings API sends for `encoding_format: "base64"`). The server decodes it in
 * service/validate.ts (fromBase64Float32) and checks it with isStandardBase64 (also the schema's
 * `byte` format, http/app.ts).
 */
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Values are rounded to float32 (as the server would round JSON numbers). */
export function encodeFloat32Base64(values: ArrayLike<number>): string {
  const f32 = values instanceof Float32Array ? values : Float32Array.from(values);
  const bytes = Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength);
  return LITTLE_ENDIAN ? bytes.toString('base64') : Buffer.from(bytes).swap32().toString('base64');
}

/** What `isStandardBase64` accepts, for messages. */
export const STANDARD_BASE64 = 'standard base64 as an encoder writes it (A-Z a-z 0-9 + /, padded with =, no line breaks)';

/**
 * Standard base64 (RFC 4648 §4) in canonical form: alphabet `A-Z a-z 0-9 + /`, `=` padding to a
 * multiple of 4 characters, no whitespace, unused trailing bits zero. Checked by decoding and
 * encoding again (Node's decoder alone is lenient: it skips stray characters and accepts the
 * URL-safe alphabet): a few µs for a 384-value vector, several times faster than the equivalent
 * regular expression on the same string.
 */
export function isStandardBase64(s: string): boolean {
  return Buffer.from(s, 'base64').toString('base64') === s;
}
