/**
 * A package loaded on first use instead of at start: `const loadX = lazyImport(() => import('x'))`,
 * then `(await loadX()).default` where it is needed. The import runs once; every caller shares it.
 * For rarely used heavy dependencies (payments, Docker, document parsers), so a start does not pay
 * for them. Their types stay static (`import type`).
 */
export function lazyImport<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => (loading ??= load());
}
