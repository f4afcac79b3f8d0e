import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from './config.ts';

describe('configuration', () => {
  it('has working defaults and is frozen', () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.storage, 'embedded');
    assert.equal(c.limits.bodyBytes, 32 * 1024 * 1024);
    assert.ok(Object.isFrozen(c) && Object.isFrozen(c.limits) && Object.isFrozen(c.plans.free));
    assert.throws(() => ((c as { port: number }).port = 1));
  });

  it('reports every bad setting at once', () => {
    assert.throws(
      () => loadConfig({ VSS_PORT: 'eighty', VSS_STORAGE: 'mongo', VSS_ADMIN_KEY: 'short', VSS_LOG_LEVEL: 'loud' }),
      (e: unknown) => e instanceof ConfigError && e.problems.length === 4,
    );
  });
});
