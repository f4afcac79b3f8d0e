/**
 * Where the CLI finds its server and key: flags, then the environment (VSS_URL, VSS_API_KEY),
 * then a config file (--config, or $XDG_CONFIG_HOME/vss/config.json, or ~/.config/vss/config.json).
 * An empty value counts as unset, so `VSS_API_KEY=` in a script does not hide the config file's key.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { UsageError } from './errors.ts';

export interface CliSettings {
  url: string;
  key: string | undefined;
}

interface ConfigFile {
  url?: string;
  key?: string;
}

const DEFAULT_URL = 'http://127.0.0.1:8080';

export function defaultConfigPath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(base, 'vss', 'config.json');
}

/** The config file's settings; only the default file may be absent. A file that is there but unreadable is reported, never skipped. */
function readConfig(explicit: string | undefined, env: NodeJS.ProcessEnv): ConfigFile {
  const configPath = explicit ?? defaultConfigPath(env);
  let text: string;
  try {
    text = readFileSync(configPath, 'utf8');
  } catch (e) {
    if (!explicit && (e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new UsageError(`cannot read config file ${configPath}: ${(e as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`config file ${configPath} is not valid JSON: ${(e as Error).message}`);
  }
  const ok = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  const c = (ok ? parsed : {}) as Record<string, unknown>;
  if (!ok || !['url', 'key'].every((k) => c[k] === undefined || typeof c[k] === 'string')) {
    throw new UsageError(`config file ${configPath} must be a JSON object with "url" and "key" strings`);
  }
  return c as ConfigFile;
}

const firstSet = (...values: (string | undefined)[]) => values.find((v) => v !== undefined && v !== '');

function checkedUrl(url: string): string {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    // reported below
  }
  if (parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:') throw new UsageError(`the server URL must be an http:// or https:// URL (--url, VSS_URL or "url" in the config file), not "${url}"`);
  return url;
}

/** API keys are printable ASCII; anything else cannot be sent in the x-api-key header (and is not echoed: it may be a secret). */
function checkedKey(key: string): string {
  if (!/^[\x21-\x7e]+$/.test(key)) throw new UsageError('the API key cannot be sent: it holds spaces, control or non-ASCII characters, which an HTTP header cannot carry');
  return key;
}

export function resolveSettings(flags: { url?: string; key?: string; config?: string }, env: NodeJS.ProcessEnv): CliSettings {
  const file = readConfig(flags.config, env);
  const key = firstSet(flags.key, env.VSS_API_KEY, file.key);
  return {
    url: checkedUrl(firstSet(flags.url, env.VSS_URL, file.url) ?? DEFAULT_URL),
    key: key === undefined ? undefined : checkedKey(key),
  };
}
