import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../config/config.ts';
import { listContainers, parseDockerHost } from '../service/containers.ts';
import type { Deps } from '../service/deps.ts';
import { startTestApp, type TestApp } from './testing.ts';

interface Container { container_id: string; container_name: string; container_status: string; image: string; status_text: string }

const podmanVersion = spawnSync('podman', ['--version'], { encoding: 'utf8' });
const PODMAN_MISSING = podmanVersion.error || podmanVersion.status !== 0
  ? 'podman is not installed: the container listing against a real Docker-compatible API is not tested (`apt-get install podman`; .ci/run installs it)'
  : false;

/** GET over a unix socket; resolves with the status, or rejects when nothing answers. */
function getOverSocket(socketPath: string, urlPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: urlPath, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

// Fake embedder throughout: containers have nothing to do with meaning.
describe('GET /v1/docker/ against podman\'s Docker-compatible API', { skip: PODMAN_MISSING }, () => {
  let dir: string;
  let sock: string;
  let service: ChildProcess | undefined;
  let serviceLog = '';
  let t: TestApp;
  const ids: Record<string, string> = {};
  // Everything podman keeps (images, containers, state) lives in the temp directory.
  const globalArgs = () => ['--storage-driver=vfs', '--root', path.join(dir, 'root'), '--runroot', path.join(dir, 'runroot'), '--tmpdir', path.join(dir, 'tmp'), '--events-backend=file', '--cgroup-manager=cgroupfs'];
  const podman = (...args: string[]) => {
    const res = spawnSync('podman', [...globalArgs(), ...args], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(res.status, 0, `podman ${args.join(' ')} failed: ${res.stderr || res.error}`);
    return res.stdout.trim();
  };

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'vss-podman-'));
    sock = path.join(dir, 'podman.sock');
    // A tiny image from a rootfs tar with one static file; containers are created, not started
    // (starting one needs setrlimit, which these machines do not allow).
    const rootfs = path.join(dir, 'rootfs');
    await mkdir(rootfs);
    await writeFile(path.join(rootfs, 'hello.txt'), 'hello from a vss test image\n');
    const tar = spawnSync('tar', ['-C', rootfs, '-cf', path.join(dir, 'rootfs.tar'), '.'], { encoding: 'utf8' });
    assert.equal(tar.status, 0, tar.stderr);
    podman('import', path.join(dir, 'rootfs.tar'), 'vss-test-image');
    ids['vss-test-alpha'] = podman('create', '--name', 'vss-test-alpha', 'vss-test-image', '/hello.txt');
    ids['vss-test-beta'] = podman('create', '--name', 'vss-test-beta', 'vss-test-image', '/hello.txt');

    service = spawn('podman', [...globalArgs(), 'system', 'service', '--time=0', `unix://${sock}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    service.stdout!.on('data', (d) => (serviceLog += d));
    service.stderr!.on('data', (d) => (serviceLog += d));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (existsSync(sock) && (await getOverSocket(sock, '/_ping').catch(() => 0)) === 200) break;
      if (Date.now() > deadline || service.exitCode !== null) assert.fail(`podman system service did not come up: ${serviceLog}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    t = await startTestApp({ model: 'fake', env: { DOCKER_HOST: `unix://${sock}` } });
  });

  after(async () => {
    await t?.close();
    if (service && service.exitCode === null) {
      const exited = new Promise((r) => service!.once('exit', r));
      service.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (service.exitCode === null) service.kill('SIGKILL');
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('lists the created containers with id, name (no leading /) and status', async () => {
    const res = await t.call('GET', '/v1/docker/');
    assert.equal(res.statusCode, 200, res.body);
    const list = res.json() as Container[];
    assert.ok(Array.isArray(list));
    for (const name of ['vss-test-alpha', 'vss-test-beta']) {
      const c = list.find((x) => x.container_name === name);
      assert.ok(c, `${name} missing from ${res.body}`);
      assert.equal(c.container_id, ids[name]);
      // Podman reports a created container as "created" (older versions: "configured").
      assert.ok(['created', 'configured'].includes(c.container_status), c.container_status);
      assert.match(c.image, /vss-test-image/);
      assert.equal(typeof c.status_text, 'string');
    }
    // The trailing-slash-free path answers too.
    assert.equal((await t.call('GET', '/v1/docker')).statusCode, 200);
  });

  it('is for All keys only', async () => {
    const write = await t.makeKey('Write');
    const res = await t.call('GET', '/v1/docker/', undefined, write);
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().code, 'forbidden');
    assert.equal((await t.call('GET', '/v1/docker/', undefined, null)).statusCode, 401);
  });
});

describe('GET /v1/docker/ with no runtime answering', () => {
  let t: TestApp;
  before(async () => (t = await startTestApp({ model: 'fake', env: { DOCKER_HOST: 'unix:///nonexistent.sock' } })));
  after(() => t?.close());

  it('answers 503 runtime_unavailable naming DOCKER_HOST', async () => {
    const res = await t.call('GET', '/v1/docker/');
    assert.equal(res.statusCode, 503, res.body);
    const body = res.json();
    assert.equal(body.code, 'runtime_unavailable');
    assert.match(body.detail, /DOCKER_HOST=unix:\/\/\/nonexistent\.sock/);
    assert.match(body.detail, /no such socket/);
  });

  it('never shows the credentials a DOCKER_HOST URL may carry', async () => {
    const deps = { config: loadConfig({ DOCKER_HOST: 'tcp://ops:S3cretPass@127.0.0.1:1' }) } as unknown as Deps;
    await assert.rejects(listContainers(deps, { timeoutMs: 2000 }), (e: { code?: string; message: string }) => {
      assert.equal(e.code, 'runtime_unavailable');
      assert.doesNotMatch(e.message, /S3cretPass|ops:/);
      assert.match(e.message, /DOCKER_HOST=tcp:\/\/\[redacted\]@127\.0\.0\.1:1/);
      return true;
    });
    const unparsable = { config: loadConfig({ DOCKER_HOST: 'ftp://ops:S3cretPass@example' }) } as unknown as Deps;
    await assert.rejects(listContainers(unparsable), (e: { message: string }) => !/S3cretPass/.test(e.message));
  });

  it('checks the permission before trying the runtime', async () => {
    const res = await t.call('GET', '/v1/docker/', undefined, await t.makeKey('Write'));
    assert.equal(res.statusCode, 403);
  });

  it('is 503 for a refused TCP port, an unusable DOCKER_HOST, and a runtime that never answers', async () => {
    const deps = (dockerHost: string) => ({ config: loadConfig({ DOCKER_HOST: dockerHost }) }) as unknown as Deps;
    // A port nothing listens on (bound then closed).
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    await assert.rejects(listContainers(deps(`tcp://127.0.0.1:${port}`)), (e: { code?: string; message: string }) => {
      assert.equal(e.code, 'runtime_unavailable');
      assert.match(e.message, /connection refused/);
      return true;
    });
    await assert.rejects(listContainers(deps('ftp://example')), { code: 'runtime_unavailable' });

    // Accepts connections, never answers: the listing gives up after its timeout.
    const sockets: net.Socket[] = [];
    const silent = net.createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const started = Date.now();
    await assert.rejects(listContainers(deps(`tcp://127.0.0.1:${(silent.address() as net.AddressInfo).port}`), { timeoutMs: 300 }), (e: { code?: string; message: string }) => {
      assert.equal(e.code, 'runtime_unavailable');
      return true;
    });
    assert.ok(Date.now() - started < 3000);
    sockets.forEach((s) => s.destroy());
    await new Promise((r) => silent.close(r));
  });

  it('parses DOCKER_HOST forms', () => {
    assert.deepEqual(parseDockerHost(undefined), { socketPath: '/var/run/docker.sock' });
    assert.deepEqual(parseDockerHost('unix:///run/podman/podman.sock'), { socketPath: '/run/podman/podman.sock' });
    assert.deepEqual(parseDockerHost('/run/docker.sock'), { socketPath: '/run/docker.sock' });
    assert.deepEqual(parseDockerHost('tcp://10.0.0.5:2375'), { host: '10.0.0.5', port: 2375, protocol: 'http' });
    assert.deepEqual(parseDockerHost('tcp://docker.internal:2376'), { host: 'docker.internal', port: 2376, protocol: 'https' });
    assert.deepEqual(parseDockerHost('http://localhost:8080'), { host: 'localhost', port: 8080, protocol: 'http' });
    assert.deepEqual(parseDockerHost('https://[::1]:9999'), { host: '::1', port: 9999, protocol: 'https' });
    assert.throws(() => parseDockerHost('unix://'), { code: 'runtime_unavailable' });
  });
});
