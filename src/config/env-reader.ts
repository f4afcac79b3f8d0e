export type Env = Record<string, string | undefined>;

/**
 * Reads typed settings from an environment map. A bad value is noted in `problems` and answered
 * with the default, so the configuration can report every problem at once, not stop at the first.
 */
export class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: Env) {}

  /** The variable's value, or undefined when it is unset or empty. */
  str = (name: string): string | undefined => {
    const v = this.env[name];
    return v === undefined || v === '' ? undefined : v;
  };

  int = (name: string, def: number, min: number, max: number): number => {
    const raw = this.str(name);
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return def;
    }
    return n;
  };

  bool = (name: string, def: boolean): boolean => {
    const raw = this.str(name);
    if (raw === undefined) return def;
    if (raw !== 'true' && raw !== 'false') this.problems.push(`${name} must be true or false (got "${raw}")`);
    return raw === 'true';
  };
}
