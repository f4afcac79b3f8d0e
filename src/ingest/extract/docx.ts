/**
 * Word (.docx): the zip is checked and every entry inflated as a stream, its output counted
 * against limits.maxExpandedBytes, before mammoth (which inflates whole parts in memory) reads it.
 */
import type { Readable } from 'node:stream';
import type yauzl from 'yauzl';
import { ServiceError } from '../../errors.ts';
import { lazyImport } from '../../platform/lazy-import.ts';
import { finish } from './text.ts';
import { expandsTooMuch, unreadable, type FormatExtractor } from './types.ts';

const loadMammoth = lazyImport(() => import('mammoth'));
const loadYauzl = lazyImport(() => import('yauzl'));

/** A docx with more entries than this is not a Word document anyone wrote. */
export const MAX_ZIP_ENTRIES = 10_000;
/** Entries above this size must not expand more than MAX_COMPRESSION_RATIO times (DEFLATE's own ceiling is ~1032). */
const RATIO_CHECK_MIN_BYTES = 1 << 20;
export const MAX_COMPRESSION_RATIO = 200;

const openZip = async (bytes: Buffer): Promise<yauzl.ZipFile> => {
  const { default: yauzlLib } = await loadYauzl();
  return new Promise((resolve, reject) => {
    yauzlLib.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, decodeStrings: true, strictFileNames: false }, (err, zip) =>
      err || !zip ? reject(err ?? new Error('no zip')) : resolve(zip),
    );
  });
};

/** Every entry of the central directory, without reading any file data. */
async function zipEntries(bytes: Buffer): Promise<yauzl.Entry[]> {
  const zip = await openZip(bytes);
  return new Promise((resolve, reject) => {
    const entries: yauzl.Entry[] = [];
    zip.on('error', reject);
    zip.on('entry', (entry: yauzl.Entry) => {
      entries.push(entry);
      if (entries.length > MAX_ZIP_ENTRIES) {
        zip.close();
        reject(unreadable(`the Word document has more than ${MAX_ZIP_ENTRIES} parts`));
        return;
      }
      zip.readEntry();
    });
    zip.on('end', () => resolve(entries));
    zip.readEntry();
  });
}

/** Thrown inside the inflating loop when the running total passes the limit. */
class TooMuch extends Error {}

/** Inflates one entry into nowhere, adding what comes out to `total`; stops once past `limit`. */
async function drainEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, total: { bytes: number }, limit: number): Promise<void> {
  const stream = await new Promise<Readable>((resolve, reject) =>
    zip.openReadStream(entry, (err, s) => (err || !s ? reject(err ?? new Error('no stream')) : resolve(s))),
  );
  try {
    for await (const chunk of stream) {
      total.bytes += (chunk as Buffer).length;
      if (total.bytes > limit) throw new TooMuch();
    }
  } finally {
    stream.destroy();
  }
}

/**
 * Zip-bomb guard, run before mammoth:
 * 1. From the central directory alone (nothing inflated): at most MAX_ZIP_ENTRIES entries, no
 *    encrypted entry, no entry larger than 1 MiB expanding more than MAX_COMPRESSION_RATIO times
 *    (a bomb: 400 validation_failed), declared sizes summing to at most maxExpandedBytes (413).
 * 2. The declared sizes are the sender's claim, so every entry is then inflated as a stream and
 *    thrown away (a few KiB in memory at a time), the bytes that come out counted: past
 *    maxExpandedBytes in all it is a 413; yauzl also fails an entry that yields more than declared.
 */
export async function checkDocxZip(bytes: Buffer, maxExpandedBytes: number): Promise<void> {
  let entries: yauzl.Entry[];
  try {
    entries = await zipEntries(bytes);
  } catch (e) {
    if (e instanceof ServiceError) throw e;
    throw unreadable(`not a readable Word document: ${(e as Error).message}`, e);
  }
  let declared = 0;
  for (const e of entries) {
    if (e.isEncrypted()) throw unreadable('the Word document is encrypted');
    const size = e.uncompressedSize;
    if (size > RATIO_CHECK_MIN_BYTES && (e.compressedSize === 0 || size / e.compressedSize > MAX_COMPRESSION_RATIO)) {
      throw unreadable(
        `the Word document looks like a zip bomb: ${e.fileName} expands ${e.compressedSize === 0 ? 'from nothing' : `${Math.round(size / e.compressedSize)} times`} to ${size} bytes`,
      );
    }
    declared += size;
  }
  if (declared > maxExpandedBytes) throw expandsTooMuch(`the Word document (${declared} bytes declared)`, maxExpandedBytes);
  let zip: yauzl.ZipFile | undefined;
  const total = { bytes: 0 };
  try {
    zip = await openZip(bytes);
    for (const e of entries) {
      if (e.fileName.endsWith('/')) continue;
      await drainEntry(zip, e, total, maxExpandedBytes);
    }
  } catch (e) {
    if (e instanceof TooMuch) throw expandsTooMuch('the Word document', maxExpandedBytes);
    throw unreadable(`not a readable Word document: ${(e as Error).message}`, e);
  } finally {
    zip?.close();
  }
}

export const extractDocx: FormatExtractor = async (bytes, limits) => {
  await checkDocxZip(bytes, limits.maxExpandedBytes);
  const { default: mammoth } = await loadMammoth();
  let raw: string;
  try {
    raw = (await mammoth.extractRawText({ buffer: bytes })).value;
  } catch (e) {
    throw unreadable(`not a readable Word document: ${(e as Error).message}`, e);
  }
  return finish(raw, 'docx:mammoth', limits);
};
