import os from 'node:os';
import type { Deps } from './deps.ts';

export const SERVICE_NAME = 'vss';
export const SERVICE_VERSION = '0.1.0';

function primaryAddress(): string {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

/** The eleven fields of the specification's section 2.5; `python_version` carries the runtime's version. */
export function systemInfo() {
  return {
    platform: os.type(),
    platform_release: os.release(),
    platform_version: os.version(),
    architecture: os.arch(),
    hostname: os.hostname(),
    ip_address: primaryAddress(),
    processor: os.cpus()[0]?.model ?? os.arch(),
    python_version: `node ${process.versions.node}`,
    machine: os.machine(),
    pid: process.pid,
    cores: os.availableParallelism(),
  };
}

/** Non-secret settings only: no keys, secrets, credentials, or URLs that may embed them. */
export function environment({ config, models }: Deps) {
  return {
    version: SERVICE_VERSION,
    storage: config.storage,
    default_model: config.defaultModel,
    default_keyspace: config.defaultKeyspace,
    default_table: config.defaultTable,
    models: models.list().map((m) => m.name),
    limits: {
      body_bytes: config.limits.bodyBytes,
      upload_bytes: config.limits.uploadBytes,
      uploads_per_user: config.limits.uploadsPerUser,
      batch_items: config.limits.batchItems,
      max_dimension: config.limits.maxDimension,
      max_final_top_k: config.limits.maxFinalTopK,
      query_bytes: config.limits.queryBytes,
      key_bytes: config.limits.keyBytes,
    },
    chat_configured: config.chat.url !== undefined,
    stripe_configured: config.stripeWebhookSecret !== undefined,
  };
}

export async function health({ storage, models }: Deps) {
  const storageOk = await storage.ping().catch(() => false);
  const modelOk = models.ready();
  return {
    ok: storageOk && modelOk,
    body: {
      status: storageOk && modelOk ? 'ok' : 'unavailable',
      checks: { storage: storageOk ? 'ok' : 'unavailable', model: modelOk ? 'ok' : 'loading' },
    },
  };
}

export const root = () => ({ name: SERVICE_NAME, version: SERVICE_VERSION, openapi: '/v1/openapi.json', docs: '/v1/docs' });
