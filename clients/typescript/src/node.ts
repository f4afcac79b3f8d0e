/**
 * Node-only helpers (`@vss/client/node`): kept out of the main entry so that browsers' bundles
 * never meet node:fs.
 */
import { openAsBlob } from 'node:fs';
import path from 'node:path';

/** A file on disk as a File for `client.upload`: read from disk while it is sent, not loaded first. */
export async function fileFromPath(filePath: string): Promise<File> {
  const blob = await openAsBlob(filePath);
  return new File([blob], path.basename(filePath));
}
