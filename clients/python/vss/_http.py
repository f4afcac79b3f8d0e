"""Sending one API request: the key, retries with back-off (honouring Retry-After on 429 and
503), and turning problem answers into VssError. The sync and async drivers differ only in how
they wait and send; everything they decide is in RetryPolicy and _answer."""
from __future__ import annotations

import asyncio
import email.utils
import io
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Generator, Optional, Tuple, Union

import httpx

from .errors import VssConnectionError, VssError, error_from_response

FileSource = Union[str, "os.PathLike[str]", bytes, bytearray, io.IOBase, Any]
RETRY_STATUSES = (429, 503)


@dataclass
class Request:
    method: str
    path: str
    json: Any = None
    params: Optional[Dict[str, Any]] = None
    data: Optional[Dict[str, str]] = None
    # (field name, file name, source): a path, bytes or a binary file object.
    file: Optional[Tuple[str, Optional[str], FileSource]] = None
    raw: bool = False  # answer the bytes instead of parsed JSON
    none_on_404: bool = False
    timeout: Optional[float] = None  # this request's, instead of the client's
    headers: Dict[str, str] = field(default_factory=dict)


@dataclass
class RetryPolicy:
    """``max_retries`` more attempts after the first; back-off doubles from ``backoff`` up to
    ``max_backoff`` (with jitter); a Retry-After over ``max_retry_after`` seconds is not waited."""

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, error: VssError) -> Optional[float]:
        """Seconds to wait before attempt ``attempt + 1``, or None to give up."""
        if attempt >= self.max_retries:
            return None
        if isinstance(error, VssConnectionError):
            pass
        elif error.status not in RETRY_STATUSES:
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_retry_after else None
        return min(self.max_backoff, self.backoff * (2 ** attempt)) * (0.5 + random.random() / 2)


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _answer(req: Request, resp: httpx.Response) -> Any:
    if resp.status_code == 404 and req.none_on_404:
        return None
    if resp.status_code >= 400:
        try:
            body = resp.json()
        except ValueError:
            body = None
        raise error_from_response(resp.status_code, body, resp.text, parse_retry_after(resp.headers.get("retry-after")))
    if req.raw:
        return resp.content
    if not resp.content:
        return None
    return resp.json()


class _OpenedFile:
    """The file part of an upload, opened anew (or rewound) for every attempt."""

    def __init__(self, source: FileSource) -> None:
        self.source = source
        self.start: Optional[int] = None
        if hasattr(source, "read") and hasattr(source, "seek"):
            try:
                self.start = source.tell()
            except (OSError, ValueError):  # a pipe or socket: sent as it comes, once
                self.start = None
        self.handle: Any = None

    def open(self) -> Any:
        s = self.source
        if isinstance(s, (bytes, bytearray)):
            return bytes(s)
        if isinstance(s, (str, os.PathLike)):
            self.close()
            self.handle = open(s, "rb")
            return self.handle
        if self.start is not None:
            s.seek(self.start)
        return s

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def _file_name(name: Optional[str], source: FileSource) -> str:
    if name:
        return name
    if isinstance(source, (str, os.PathLike)):
        return os.path.basename(os.fspath(source))
    n = getattr(source, "name", None)
    return os.path.basename(n) if isinstance(n, str) else "upload"


def _httpx_kwargs(req: Request, opened: Optional[_OpenedFile]) -> Dict[str, Any]:
    kw: Dict[str, Any] = {"params": req.params, "headers": req.headers or None}
    if req.timeout is not None:
        kw["timeout"] = req.timeout
    if req.json is not None:
        kw["json"] = req.json
    if req.file is not None and opened is not None:
        field_name, name, source = req.file
        # httpx writes data fields before files: the server checks keyspace and table first.
        kw["data"] = req.data
        kw["files"] = {field_name: (_file_name(name, source), opened.open(), "application/octet-stream")}
    return kw


def _transport_error(e: httpx.HTTPError) -> VssConnectionError:
    return VssConnectionError(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)


Step = Tuple[str, Any]  # ("send", httpx keyword arguments) or ("sleep", seconds)


def _attempts(req: Request, policy: RetryPolicy) -> Generator[Step, Any, Any]:
    """One request with its retries, for either driver: yields what to do next and receives the
    httpx.Response (or the httpx error) of each send; returns the parsed answer or raises."""
    opened = _OpenedFile(req.file[2]) if req.file else None
    attempt = 0
    try:
        while True:
            outcome = yield ("send", _httpx_kwargs(req, opened))
            if isinstance(outcome, httpx.HTTPError) and not isinstance(outcome, (httpx.ConnectError, httpx.ConnectTimeout)):
                # The request may have arrived (a time-out, a cut answer): a write could land
                # twice, so it is not retried.
                raise _transport_error(outcome) from outcome
            try:
                if isinstance(outcome, httpx.HTTPError):
                    raise _transport_error(outcome) from outcome
                return _answer(req, outcome)
            except VssError as err:
                wait = policy.delay(attempt, err)
                if wait is None:
                    raise
            yield ("sleep", wait)
            attempt += 1
    finally:
        if opened:
            opened.close()


class SyncDriver:
    def __init__(self, http: httpx.Client, retry: RetryPolicy) -> None:
        self.http = http
        self.retry = retry

    def send(self, req: Request) -> Any:
        steps = _attempts(req, self.retry)
        try:
            kind, arg = next(steps)
            while True:
                if kind == "sleep":
                    time.sleep(arg)
                    kind, arg = steps.send(None)
                    continue
                try:
                    outcome: Any = self.http.request(req.method, req.path, **arg)
                except httpx.HTTPError as e:
                    outcome = e
                kind, arg = steps.send(outcome)
        except StopIteration as done:
            return done.value

    def run(self, op: Generator[Request, Any, Any]) -> Any:
        try:
            req = next(op)
            while True:
                req = op.send(self.send(req))
        except StopIteration as done:
            return done.value


class AsyncDriver:
    def __init__(self, http: httpx.AsyncClient, retry: RetryPolicy) -> None:
        self.http = http
        self.retry = retry

    async def send(self, req: Request) -> Any:
        steps = _attempts(req, self.retry)
        try:
            kind, arg = next(steps)
            while True:
                if kind == "sleep":
                    await asyncio.sleep(arg)
                    kind, arg = steps.send(None)
                    continue
                try:
                    outcome: Any = await self.http.request(req.method, req.path, **arg)
                except httpx.HTTPError as e:
                    outcome = e
                kind, arg = steps.send(outcome)
        except StopIteration as done:
            return done.value

    async def run(self, op: Generator[Request, Any, Any]) -> Any:
        """Runs an operation: each request it yields is sent and its answer sent back in."""
        try:
            req = next(op)
            while True:
                req = op.send(await self.send(req))
        except StopIteration as done:
            return done.value
