"""A real vss server for the tests: ``node scripts/start.mjs`` from the repository root, on a
free loopback port, with a temporary data directory and a known administrator key."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, List

import httpx
import pytest

import vss

REPO_ROOT = Path(os.environ.get("VSS_REPO_ROOT") or Path(__file__).resolve().parents[3])
ADMIN_KEY = "pytest-admin-key-" + uuid.uuid4().hex
# Low enough that a free-plan user meets a real 429 within a few requests; the administrator's
# plan is not limited by it.
FREE_REQUESTS_PER_MINUTE = 5
START_TIMEOUT_S = 120


@dataclass
class Server:
    url: str
    admin_key: str
    log: List[str]


def _start() -> Iterator[Server]:
    data_dir = tempfile.mkdtemp(prefix="vss-pytest-")
    env = dict(os.environ)
    env.update({
        "VSS_DATA_DIR": data_dir,
        "VSS_HOST": "127.0.0.1",
        "VSS_PORT": "0",
        "VSS_ADMIN_KEY": ADMIN_KEY,
        "VSS_LOG_LEVEL": "warn",
        "VSS_FREE_REQUESTS_PER_MINUTE": str(FREE_REQUESTS_PER_MINUTE),
    })
    proc = subprocess.Popen(["node", "scripts/start.mjs"], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    log: List[str] = []
    port: List[int] = []
    listening = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            log.append(line.rstrip())
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m and not port:
                port.append(int(m.group(1)))
                listening.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        if not listening.wait(START_TIMEOUT_S):
            raise RuntimeError("vss did not start listening:\n" + "\n".join(log[-40:]))
        url = f"http://127.0.0.1:{port[0]}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if httpx.get(url + "/v1/healthcheck/", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("vss did not become healthy:\n" + "\n".join(log[-40:]))
            time.sleep(0.2)
        yield Server(url=url, admin_key=ADMIN_KEY, log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    yield from _start()


@pytest.fixture()
def client(server: Server) -> Iterator[vss.Client]:
    with vss.Client(server.url, server.admin_key) as c:
        yield c


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def keyspace(server: Server) -> str:
    """A keyspace of the module's own (a keyspace holds at most 100 tables)."""
    with vss.Client(server.url, server.admin_key) as c:
        return c.create_keyspace(unique("ks")).keyspace


@pytest.fixture()
def table() -> str:
    """A table name not yet used: the first write creates it."""
    return unique("t")
