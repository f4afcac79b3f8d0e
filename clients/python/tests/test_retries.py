"""Retries against a scripted server: 429 and 503 are retried after their Retry-After, other
errors and exhausted retries raise the server's problem."""
from __future__ import annotations

import email.utils
import time

import pytest

import vss
from vss._http import parse_retry_after

from .fake_server import FakeServer, problem

OK = (200, {}, {"keyspace": "k", "table": "t", "count": 7})


def test_429_then_503_are_retried_after_retry_after() -> None:
    script = [(429, {"retry-after": "1"}, problem(429, "rate_limited")), (503, {"retry-after": "0"}, problem(503, "not_ready")), OK]
    with FakeServer(script) as f, vss.Client(f.url, "k", backoff=0.01) as c:
        assert c.count(keyspace="k", table="t") == 7
        assert len(f.received) == 3
        # The first retry waited the 1 s the server asked for, not the 10 ms back-off.
        assert f.received[1].at - f.received[0].at >= 0.95
        assert f.received[2].body == f.received[0].body


async def test_async_client_retries_too() -> None:
    script = [(503, {"retry-after": "1"}, problem(503, "storage_unavailable")), OK]
    with FakeServer(script) as f:
        async with vss.AsyncClient(f.url, "k", backoff=0.01) as c:
            assert await c.count(keyspace="k", table="t") == 7
        assert len(f.received) == 2
        assert f.received[1].at - f.received[0].at >= 0.95


def test_without_retry_after_backs_off_and_gives_up_after_max_retries() -> None:
    with FakeServer([], default=(503, {}, problem(503, "not_ready", "model loading"))) as f, \
            vss.Client(f.url, "k", max_retries=2, backoff=0.01) as c:
        with pytest.raises(vss.ServiceUnavailableError) as e:
            c.count(keyspace="k", table="t")
        assert len(f.received) == 3
        assert e.value.code == "not_ready" and e.value.status == 503 and e.value.detail == "model loading"


def test_a_retry_after_longer_than_allowed_is_not_waited() -> None:
    with FakeServer([(429, {"retry-after": "3600"}, problem(429, "rate_limited"))]) as f, vss.Client(f.url, "k") as c:
        with pytest.raises(vss.RateLimitError) as e:
            c.count(keyspace="k", table="t")
        assert e.value.retry_after == 3600 and len(f.received) == 1


def test_other_errors_are_not_retried() -> None:
    body = problem(400, "validation_failed")
    body["errors"] = [{"path": "/body/final_top_k", "message": "must be >= 1"}]
    with FakeServer([(400, {}, body), OK]) as f, vss.Client(f.url, "k") as c:
        with pytest.raises(vss.ValidationError) as e:
            c.count(keyspace="k", table="t")
        assert e.value.errors == body["errors"] and len(f.received) == 1


def test_connection_refused_is_retried_then_raised() -> None:
    with FakeServer([]) as f:
        url = f.url
    # The port is closed now.
    with vss.Client(url, "k", max_retries=1, backoff=0.01) as c:
        with pytest.raises(vss.VssConnectionError) as e:
            c.count(keyspace="k", table="t")
        assert e.value.status is None


def test_parse_retry_after_reads_seconds_and_http_dates() -> None:
    assert parse_retry_after("5") == 5.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    in_ten = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= (parse_retry_after(in_ten) or 0) <= 10
