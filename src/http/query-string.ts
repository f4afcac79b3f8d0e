/**
 * A strict reading of a URL's query string. Fastify's parser decodes leniently (`%FF` and a lone
 * `%` pass through as text), so a query holding invalid UTF-8 or bad percent-encoding would reach
 * validation as some other string; here it is a client error instead.
 */

/** Why the query string of `url` cannot be read, or null when it can. */
export function queryStringProblem(url: string): string | null {
  const start = url.indexOf('?');
  if (start < 0) return null;
  for (const pair of url.slice(start + 1).split('&')) {
    try {
      decodeURIComponent(pair.replace(/\+/g, ' '));
    } catch {
      return 'has bad percent-encoding or percent-encoded bytes that are not UTF-8';
    }
  }
  return null;
}
