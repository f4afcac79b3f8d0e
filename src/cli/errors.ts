/** A mistake in how the command was called (a flag, a setting, a file name): exit 2, before any request it would spoil. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The user stopped the command with a signal; the shell convention is 128 + the signal's number. */
export class Interrupted extends Error {
  constructor(readonly signal: 'SIGINT' | 'SIGTERM') {
    super(`interrupted by ${signal}`);
    this.name = 'Interrupted';
  }

  get exitCode(): number {
    return this.signal === 'SIGINT' ? 130 : 143;
  }
}
