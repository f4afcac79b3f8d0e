/**
 * Where the CLI finds its server and key: flags, then the environment (VSS_URL, VSS_API_KEY),
 * then a config file (--config, or $XDG_CONFIG_HOME/vss/config.json, or ~/.config/vss/config.json).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface CliSettings {
  url: string;
  key: string | undefined;
}

export function defaultConfigPath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(base, 'vss', 'config.json');
}

export function resolveSettings(flags: { url?: string; key?: string; config?: string }, env: NodeJS.ProcessEnv): CliSettings {
  let file: { url?: string; key?: string } = {};
  const configPath = flags.config ?? defaultConfigPath(env);
  try {
    file = JSON.parse(readFileSync(configPath, 'utf8')) as typeof file;
  } catch (e) {
    if (flags.config) throw new Error(`cannot read config file ${configPath}: ${(e as Error).message}`);
  }
  return {
    url: flags.url ?? env.VSS_URL ?? file.url ?? 'http://127.0.0.1:8080',
    key: flags.key ?? env.VSS_API_KEY ?? file.key,
  };
}
