/**
 * A Float32Array as `vector_base64` (little-endian float32 bytes in standard base64, docs/API.md
 * "Binary vectors"), written through a DataView so the byte order holds on any host, and btoa so
 * it runs in browsers too.
 */
export function float32ToBase64(values: Float32Array): string {
  const view = new DataView(new ArrayBuffer(values.length * 4));
  values.forEach((v, i) => view.setFloat32(i * 4, v, true));
  const bytes = new Uint8Array(view.buffer);
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}
