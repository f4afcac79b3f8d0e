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
        self.start = source.tell() if hasattr(source, "tell") and hasattr(source, "read") else None
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


class SyncDriver:
    def __init__(self, http: httpx.Client, retry: RetryPolicy) -> None:
        self.http = http
        self.retry = retry

    def send(self, req: Request) -> Any:
        opened = _OpenedFile(req.file[2]) if req.file else None
        attempt = 0
        try:
            while True:
                try:
                    try:
                        resp = self.http.request(req.method, req.path, **_httpx_kwargs(req, opened))
                    except (httpx.ConnectError, httpx.ConnectTimeout) as e:
                        raise _transport_error(e) from e
                    except httpx.HTTPError as e:
                        # The request may have arrived: not retried (a write could land twice).
                        raise _NoRetry(_transport_error(e)) from e
                    return _answer(req, resp)
                except VssError as err:
                    wait = self.retry.delay(attempt, err)
                    if wait is None:
                        raise
                    time.sleep(wait)
                    attempt += 1
        except _NoRetry as nr:
            raise nr.error from None
        finally:
            if opened:
                opened.close()

    def run(self, gen: Generator[Request, Any, Any]) -> Any:
        return drive_sync(gen, self.send)


class AsyncDriver:
    def __init__(self, http: httpx.AsyncClient, retry: RetryPolicy) -> None:
        self.http = http
        self.retry = retry

    async def send(self, req: Request) -> Any:
        opened = _OpenedFile(req.file[2]) if req.file else None
        attempt = 0
        try:
            while True:
                try:
                    try:
                        resp = await self.http.request(req.method, req.path, **_httpx_kwargs(req, opened))
                    except (httpx.ConnectError, httpx.ConnectTimeout) as e:
                        raise _transport_error(e) from e
                    except httpx.HTTPError as e:
                        raise _NoRetry(_transport_error(e)) from e
                    return _answer(req, resp)
                except VssError as err:
                    wait = self.retry.delay(attempt, err)
                    if wait is None:
                        raise
                    await asyncio.sleep(wait)
                    attempt += 1
        except _NoRetry as nr:
            raise nr.error from None
        finally:
            if opened:
                opened.close()

    async def run(self, gen: Generator[Request, Any, Any]) -> Any:
        try:
            req = next(gen)
            while True:
                req = gen.send(await self.send(req))
        except StopIteration as done:
            return done.value


class _NoRetry(Exception):
    def __init__(self, error: VssError) -> None:
        super().__init__(str(error))
        self.error = error


def drive_sync(gen: Generator[Request, Any, Any], send: Any) -> Any:
    """Runs an operation: each request it yields is sent and its answer sent back in."""
    try:
        req = next(gen)
        while True:
            req = gen.send(send(req))
    except StopIteration as done:
        return done.value
