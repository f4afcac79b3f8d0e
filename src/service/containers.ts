/**
 * `GET /v1/docker/`: the containers of a Docker-Engine-compatible runtime (Docker, Podman's
 * API service) reached at DOCKER_HOST, through dockerode. No runtime answering in time is
 * `runtime_unavailable` (503), with a message naming where it looked.
 */
import type Docker from 'dockerode';
import { ServiceError } from '../errors.ts';
import { lazyImport } from '../platform/lazy-import.ts';
import type { Deps } from './deps.ts';

export interface ContainerView {
  container_id: string;
  /** The first name, without Docker's leading `/`. */
  container_name: string;
  /** The runtime's state: created, running, paused, restarting, exited, dead (Podman: also configured...). */
  container_status: string;
  image: string;
  /** The runtime's human text, e.g. "Up 3 minutes" or "Exited (0) 2 hours ago". */
  status_text: string;
}

const loadDockerode = lazyImport(() => import('dockerode'));

export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';
/** How long the runtime has to answer the listing. */
export const DOCKER_TIMEOUT_MS = 5000;

type Connection = { socketPath: string } | { host: string; port: number; protocol: 'http' | 'https' };

/**
 * DOCKER_HOST → dockerode options: `unix:///path` (or a bare `/path`) is a socket,
 * `tcp://host:port` and `http://` are plain HTTP (2376 means TLS, as Docker's client assumes),
 * `https://` is TLS. Unset: the local socket.
 */
export function parseDockerHost(dockerHost: string | undefined): Connection {
  if (dockerHost === undefined || dockerHost.trim() === '') return { socketPath: DEFAULT_DOCKER_SOCKET };
  const value = dockerHost.trim();
  if (value.startsWith('/')) return { socketPath: value };
  if (value.startsWith('unix://')) {
    const socketPath = value.slice('unix://'.length);
    if (socketPath === '') throw unavailable(dockerHost, 'it names no socket path');
    return { socketPath };
  }
  if (value.startsWith('npipe://')) return { socketPath: value.slice('npipe:'.length).replace(/\//g, '\\') };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw unavailable(dockerHost, 'it is not unix:///path, tcp://host:port or http(s)://host:port');
  }
  const scheme = url.protocol.replace(/:$/, '');
  if (!['tcp', 'http', 'https'].includes(scheme) || url.hostname === '') {
    throw unavailable(dockerHost, 'it is not unix:///path, tcp://host:port or http(s)://host:port');
  }
  const defaultPort = scheme === 'https' ? 2376 : scheme === 'http' ? 80 : 2375;
  const port = url.port === '' ? defaultPort : Number(url.port);
  const protocol = scheme === 'https' || (scheme === 'tcp' && port === 2376) ? 'https' : 'http';
  return { host: url.hostname.replace(/^\[|\]$/g, ''), port, protocol };
}

/** DOCKER_HOST as it may be shown: a `user:password@` in it is a secret. */
const withoutCredentials = (dockerHost: string): string => dockerHost.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1[redacted]@');

const where = (dockerHost: string | undefined): string =>
  dockerHost === undefined ? `the default socket ${DEFAULT_DOCKER_SOCKET} (DOCKER_HOST is not set)` : `DOCKER_HOST=${withoutCredentials(dockerHost)}`;

function unavailable(dockerHost: string | undefined, why: string, cause?: unknown): ServiceError {
  return new ServiceError('runtime_unavailable', `No container runtime answered at ${where(dockerHost)}: ${why}.`, { cause });
}

function reason(e: unknown): string {
  const err = e as { code?: string; statusCode?: number; message?: string } | null;
  if (err?.code === 'ENOENT') return 'no such socket';
  if (err?.code === 'ECONNREFUSED') return 'connection refused';
  if (err?.code === 'EACCES') return 'permission denied on the socket';
  if (typeof err?.statusCode === 'number') return `the runtime answered HTTP ${err.statusCode}`;
  return err?.message ? err.message.split('\n')[0].slice(0, 200) : 'unknown error';
}

export async function listContainers(deps: Deps, opts: { timeoutMs?: number } = {}): Promise<ContainerView[]> {
  const dockerHost = deps.config.dockerHost;
  const timeoutMs = opts.timeoutMs ?? DOCKER_TIMEOUT_MS;
  const conn = parseDockerHost(dockerHost);
  const { default: DockerClient } = await loadDockerode();
  // Explicit fields override whatever docker-modem would read from process.env itself.
  const docker = new DockerClient({ host: undefined, port: undefined, socketPath: undefined, ...conn, timeout: timeoutMs });
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(unavailable(dockerHost, `no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  let list: Docker.ContainerInfo[];
  try {
    list = await Promise.race([docker.listContainers({ all: true }), deadline]);
  } catch (e) {
    if (e instanceof ServiceError) throw e;
    throw unavailable(dockerHost, reason(e), e);
  } finally {
    clearTimeout(timer);
  }
  if (!Array.isArray(list)) throw unavailable(dockerHost, 'the answer is not a container list');
  return list.map((c) => ({
    container_id: String(c.Id),
    container_name: (c.Names?.[0] ?? '').replace(/^\//, ''),
    container_status: String(c.State ?? ''),
    image: String(c.Image ?? ''),
    status_text: String(c.Status ?? ''),
  }));
}
