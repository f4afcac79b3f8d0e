import { parseArgs } from 'node:util';

type Default = string | number | boolean | undefined;
type Parsed<T> = { [K in keyof T]: T[K] extends boolean ? boolean : T[K] extends number ? number : T[K] extends string ? string : string | undefined };

/**
 * A bench's `--name value` options, each typed by its default: a number default gives a number (a
 * value that is not one stops the bench), a boolean a flag, undefined an optional string. Unknown
 * options stop the bench too, so a mistyped `--queries` is not silently run with the default.
 */
export function benchArgs<T extends Record<string, Default>>(defaults: T, argv = process.argv.slice(2)): Parsed<T> {
  const options = Object.fromEntries(
    Object.entries(defaults).map(([name, def]) =>
      typeof def === 'boolean' ? [name, { type: 'boolean' as const, default: def }] : [name, { type: 'string' as const, ...(def === undefined ? {} : { default: String(def) }) }],
    ),
  );
  const { values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false }) as { values: Record<string, string | boolean | undefined> };
  const out: Record<string, unknown> = {};
  for (const [name, def] of Object.entries(defaults)) {
    const raw = values[name];
    if (typeof def !== 'number') {
      out[name] = raw;
      continue;
    }
    const n = Number(raw);
    if (!Number.isFinite(n)) throw new Error(`--${name} takes a number (got ${String(raw)})`);
    out[name] = n;
  }
  return out as Parsed<T>;
}
