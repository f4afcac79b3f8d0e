/** What `upload` takes: bytes in memory, a Blob or File, or a stream of bytes (web or Node). */
export type UploadSource = Blob | Uint8Array | ArrayBuffer | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

/**
 * The source as a Blob, which fetch sends with a length and can send again on a retry. A stream
 * is read into memory first (up to `maxBytes`, the server's upload limit, past which it fails
 * here rather than sending what the server would refuse); a Blob from a path (node.ts) is read
 * from disk as it is sent.
 */
export async function toBlob(source: UploadSource, maxBytes: number): Promise<Blob> {
  if (source instanceof Blob) return source;
  if (source instanceof Uint8Array || source instanceof ArrayBuffer) return new Blob([source as BlobPart]);
  const parts: Uint8Array[] = [];
  let size = 0;
  const iterable: AsyncIterable<Uint8Array> = isWebStream(source) ? webStreamChunks(source) : source;
  for await (const chunk of iterable) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new RangeError(`the upload stream passed ${maxBytes} bytes, the upload limit`);
    parts.push(chunk);
  }
  return new Blob(parts as BlobPart[]);
}

const isWebStream = (s: unknown): s is ReadableStream<Uint8Array> => typeof (s as ReadableStream).getReader === 'function';

/** Browsers' ReadableStream is not async-iterable everywhere yet (Safari), so read it by hand. */
async function* webStreamChunks(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}
