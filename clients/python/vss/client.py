"""``vss.Client`` and ``vss.AsyncClient``: one set of operations, two ways to send them.

Each operation is a generator that yields the requests it needs and receives their answers, so
its logic (batching, defaults, parsing) is written once; ``Client`` runs it with blocking I/O and
returns the result, ``AsyncClient`` runs it on httpx's async client and returns an awaitable.
"""
from __future__ import annotations

from typing import Any, Dict, Generator, List, Mapping, Optional, Sequence
from urllib.parse import quote

import httpx

from ._batching import chunks, float32_base64, split_batches, to_record
from ._http import AsyncDriver, FileSource, Request, RetryPolicy, SyncDriver
from .models import ApiKey, FileInfo, KeyspaceInfo, SearchResult, TableInfo, VectorPage, VectorRecord, WriteResult

DEFAULT_KEYSPACE = "default_keyspace"
DEFAULT_TABLE = "vector"
MAX_BATCH_ITEMS = 1000
MAX_BODY_BYTES = 32 * 1024 * 1024
DEFAULT_TIMEOUT = 60.0
UPLOAD_TIMEOUT = 600.0

Op = Generator[Request, Any, Any]


def _without_none(d: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _user_agent() -> str:
    from . import __version__

    return f"vss-python/{__version__}"


class _Api:
    """The operations. Subclasses provide ``_run(op)`` (the result, or an awaitable of it)."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8080",
        api_key: Optional[str] = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        upload_timeout: float = UPLOAD_TIMEOUT,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_retry_after: float = 60.0,
        max_batch_items: int = MAX_BATCH_ITEMS,
        max_body_bytes: int = MAX_BODY_BYTES,
        binary_vectors: bool = True,
    ) -> None:
        """``url`` is the server's root (``/v1`` is added); ``binary_vectors`` sends written and
        searched vectors as float32 base64 (exact, and a third of JSON's size)."""
        self.url = url.rstrip("/")
        if self.url.endswith("/v1"):
            self.url = self.url[: -len("/v1")]
        self.retry = RetryPolicy(max_retries=max_retries, backoff=backoff, max_retry_after=max_retry_after)
        self.max_batch_items = max_batch_items
        self.max_body_bytes = max_body_bytes
        self.binary_vectors = binary_vectors
        self.upload_timeout = upload_timeout
        self._headers = {"user-agent": _user_agent()}
        if api_key:
            self._headers["x-api-key"] = api_key
        self._timeout = timeout

    def _run(self, op: Op) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    # --- system ------------------------------------------------------------------------------
    def health(self) -> Any:
        """``GET /v1/healthcheck/``: ``{status, checks}``; a 503 (not ready) raises."""
        return self._run(_one(Request("GET", "/v1/healthcheck/")))

    def env(self) -> Any:
        """Non-secret settings: version, models, limits."""
        return self._run(_one(Request("GET", "/v1/env/")))

    # --- accounts and keys -------------------------------------------------------------------
    def me(self) -> Any:
        """The caller's user, plan limits and usage."""
        return self._run(_one(Request("GET", "/v1/user/")))

    def create_user(self, name: str, email: str) -> Any:
        """A user on the free plan (administrators)."""
        return self._run(_one(Request("POST", "/v1/user/", json={"name": name, "email": email})))

    def list_users(self) -> Any:
        return self._run(_map(Request("GET", "/v1/users/"), lambda a: a["users"]))

    def create_key(self, *, permissions: Optional[str] = None, resources: Optional[Sequence[str]] = None,
                   name: Optional[str] = None, user_id: Optional[str] = None) -> Any:
        """A new key (``ApiKey.key`` holds the secret, answered only here)."""
        body = _without_none({"permissions": permissions, "resources": list(resources) if resources else None, "name": name, "user_id": user_id})
        return self._run(_map(Request("POST", "/v1/keys/generate", json=body), ApiKey.from_json))

    def list_keys(self, user_id: Optional[str] = None) -> Any:
        params = _without_none({"user_id": user_id}) or None
        return self._run(_map(Request("GET", "/v1/keys/retrieve", params=params), lambda a: [ApiKey.from_json(k) for k in a["keys"]]))

    def revoke_key(self, key_id: str) -> Any:
        return self._run(_map(Request("POST", "/v1/keys/revoke", json={"key_id": key_id}), ApiKey.from_json))

    def rotate_key(self, key_id: str) -> Any:
        """A new secret with the same grant; the old key works until revoked."""
        return self._run(_map(Request("POST", "/v1/keys/rotate", json={"key_id": key_id}), ApiKey.from_json))

    # --- keyspaces and tables ----------------------------------------------------------------
    def create_keyspace(self, keyspace: Optional[str] = None) -> Any:
        """A keyspace (named, or a unique ``ks_…`` name) with a ``vector`` table."""
        return self._run(_map(Request("POST", "/v1/keyspaces/create", json=_without_none({"keyspace": keyspace})), KeyspaceInfo.from_json))

    def list_keyspaces(self) -> Any:
        return self._run(_map(Request("GET", "/v1/keyspaces/list"), lambda a: [KeyspaceInfo.from_json(k) for k in a["keyspaces"]]))

    def create_table(self, keyspace: str, table: str, *, dimension: Optional[int] = None, metric: Optional[str] = None,
                     model_name: Optional[str] = None, **extra: Any) -> Any:
        """A table; ``extra`` passes newer fields through (e.g. ``lexical={"tokenizer": "porter"}``)."""
        body = _without_none({"keyspace": keyspace, "table": table, "dimension": dimension, "metric": metric, "model_name": model_name, **extra})
        return self._run(_map(Request("POST", "/v1/keyspaces/table/create", json=body), TableInfo.from_json))

    def set_default_ttl(self, keyspace: str, table: str, seconds: Optional[int]) -> Any:
        """Sets (or, with None, removes) the TTL of rows later written without one; answers it."""
        body = {"keyspace": keyspace, "table": table, "default_ttl_seconds": seconds}
        return self._run(_map(Request("POST", "/v1/keyspaces/table/update", json=body), lambda a: a["default_ttl_seconds"]))

    # --- vectors -----------------------------------------------------------------------------
    def write(self, *, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE, key: Optional[str] = None,
              vector: Optional[Sequence[float]] = None, text: Optional[str] = None,
              metadata: Optional[Mapping[str, Any]] = None, model_name: Optional[str] = None,
              ttl_seconds: Optional[int] = None) -> Any:
        """Upserts one row (``text`` alone is embedded by the server); answers its key.
        ``ttl_seconds``: the row expires that long after the write (else the table's default)."""
        record = to_record({"key": key, "vector": vector, "text": text, "metadata": metadata, "ttl_seconds": ttl_seconds},
                           self.binary_vectors)
        body = _without_none({"keyspace": keyspace, "table": table, "model_name": model_name, **record})
        return self._run(_map(Request("POST", "/v1/vector/write", json=body), lambda a: a["key"]))

    def upsert(self, items: Sequence[Mapping[str, Any]], *, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE,
               model_name: Optional[str] = None, ttl_seconds: Optional[int] = None) -> Any:
        """Upserts ``items`` (dicts of key, vector, text, metadata, ttl_seconds) in as many requests
        as the server's batch limits need. Each request is all or nothing; a failure raises after
        the batches before it were written (upserts by key: sending all again is safe).
        ``ttl_seconds`` applies to the items that name none."""
        records = [to_record(i, self.binary_vectors) for i in items]
        return self._run(_upsert(records, keyspace, table, model_name, ttl_seconds, self.max_batch_items, self.max_body_bytes))

    def get(self, key: str, *, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE, include_vector: bool = True) -> Any:
        """One row; a missing key raises NotFoundError (``code`` ``vector_not_found``)."""
        body = {"keyspace": keyspace, "table": table, "key": key, "include_vector": include_vector}
        return self._run(_map(Request("POST", "/v1/vector/get", json=body), VectorRecord.from_json))

    def get_many(self, keys: Sequence[str], *, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE,
                 include_vector: bool = False) -> Any:
        """The rows of ``keys`` that exist, in the order asked (missing keys are left out)."""
        return self._run(_get_many(list(keys), keyspace, table, include_vector))

    def delete(self, keys: Optional[Sequence[str]] = None, *, filter: Optional[Mapping[str, Any]] = None,
               keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE) -> Any:
        """Deletes by keys (in batches of the server's limit) or by metadata filter; answers how many went."""
        return self._run(_delete(None if keys is None else list(keys), filter, keyspace, table, self.max_batch_items))

    def count(self, *, filter: Optional[Mapping[str, Any]] = None, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE) -> Any:
        body = _without_none({"keyspace": keyspace, "table": table, "filter": filter})
        return self._run(_map(Request("POST", "/v1/vector/count", json=body), lambda a: int(a["count"])))

    def list_vectors(self, *, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE, cursor: Optional[str] = None,
                     limit: Optional[int] = None, include_vector: bool = False) -> Any:
        """One page in key order; pass the page's ``cursor`` back for the next (None: the end)."""
        body = _without_none({"keyspace": keyspace, "table": table, "cursor": cursor, "limit": limit, "include_vector": include_vector})
        return self._run(_map(Request("POST", "/v1/vector/list", json=body), VectorPage.from_json))

    def search(self, query: Optional[str] = None, *, vector: Optional[Sequence[float]] = None,
               keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE, final_top_k: Optional[int] = None,
               initial_top_k: Optional[int] = None, filter: Optional[Mapping[str, Any]] = None,
               include_vector: Optional[bool] = None, model_name: Optional[str] = None, metric: Optional[str] = None,
               mode: Optional[str] = None, fusion: Optional[Mapping[str, Any]] = None,
               mmr: Optional[Mapping[str, Any]] = None, rerank: Optional[bool] = None, ef: Optional[int] = None,
               **extra: Any) -> Any:
        """Search by text (``query``) or by ``vector``. ``mode`` (semantic, lexical, hybrid),
        ``fusion``, ``mmr`` ({diversity, candidates}), ``rerank`` and ``ef`` (the graph walk's
        width) go to servers that have them; ``extra`` passes any newer field through."""
        body = _without_none({
            "query": query, "keyspace": keyspace, "table": table, "final_top_k": final_top_k,
            "initial_top_k": initial_top_k, "filter": filter, "include_vector": include_vector,
            "model_name": model_name, "metric": metric, "mode": mode, "fusion": fusion, "mmr": mmr,
            "rerank": rerank, "ef": ef, **extra,
        })
        if vector is not None:
            body.update({"vector_base64": float32_base64(vector)} if self.binary_vectors else {"vector": list(vector)})
        return self._run(_map(Request("POST", "/v1/search/", json=body), SearchResult.from_json))

    # --- embeddings --------------------------------------------------------------------------
    def embed(self, texts: Sequence[str], *, model: Optional[str] = None) -> Any:
        """The vectors of ``texts`` (``POST /v1/embeddings``), in order, in calls of up to 2,048."""
        return self._run(_embed(list(texts), model))

    # --- metadata records --------------------------------------------------------------------
    def write_metadata(self, source_file: str, *, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE,
                       raw_value: Optional[str] = None, source_type: Optional[str] = None,
                       processing_details: Optional[str] = None) -> Any:
        body = _without_none({"keyspace": keyspace, "table": table, "source_file": source_file, "raw_value": raw_value,
                              "source_type": source_type, "processing_details": processing_details})
        return self._run(_one(Request("POST", "/v1/metadata/write", json=body)))

    # --- files -------------------------------------------------------------------------------
    def upload(self, file: FileSource, *, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE,
               filename: Optional[str] = None, model_name: Optional[str] = None, chunk_size: Optional[int] = None,
               chunk_overlap: Optional[int] = None) -> Any:
        """Uploads a file (a path, bytes or a binary file object), chunked and embedded by the
        server. ``filename`` names it (default: the path's or file object's base name)."""
        fields = {k: str(v) for k, v in _without_none({"keyspace": keyspace, "table": table, "model_name": model_name,
                                                       "chunk_size": chunk_size, "chunk_overlap": chunk_overlap}).items()}
        req = Request("POST", "/v1/embed/", data=fields, file=("file", filename, file), timeout=self.upload_timeout)
        return self._run(_map(req, lambda a: FileInfo.from_json(a["file"])))

    def list_files(self, *, keyspace: Optional[str] = None, table: Optional[str] = None) -> Any:
        params = _without_none({"keyspace": keyspace, "table": table}) or None
        return self._run(_map(Request("GET", "/v1/files/", params=params), lambda a: [FileInfo.from_json(d) for d in a["details"]]))

    def download_file(self, name: str, *, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE) -> Any:
        """The file's bytes exactly as uploaded."""
        return self._run(_one(Request("GET", _file_path(keyspace, table, name), raw=True)))

    def delete_file(self, name: str, *, keyspace: str = DEFAULT_KEYSPACE, table: str = DEFAULT_TABLE) -> Any:
        """Deletes the file, its chunks and its metadata record; answers the chunks deleted."""
        return self._run(_map(Request("DELETE", _file_path(keyspace, table, name)), lambda a: int(a["chunks"])))


def _file_path(keyspace: str, table: str, name: str) -> str:
    return f"/v1/files/{keyspace}/{table}/{quote(name, safe='')}"


def _one(req: Request) -> Op:
    return (yield req)


def _map(req: Request, fn: Any) -> Op:
    return fn((yield req))


def _upsert(records: List[Dict[str, Any]], keyspace: str, table: str, model_name: Optional[str], ttl_seconds: Optional[int],
            max_items: int, max_bytes: int) -> Op:
    keys: List[str] = []
    batches = split_batches(records, max_items, max_bytes)
    for batch in batches:
        body = _without_none({"keyspace": keyspace, "table": table, "model_name": model_name, "ttl_seconds": ttl_seconds,
                              "vectors": batch})
        answer = yield Request("POST", "/v1/vector/batch", json=body)
        keys.extend(answer["keys"])
    return WriteResult(keyspace=keyspace, table=table, written=len(keys), keys=keys, requests=len(batches))


def _get_many(keys: List[str], keyspace: str, table: str, include_vector: bool) -> Op:
    out: List[VectorRecord] = []
    for key in keys:
        body = {"keyspace": keyspace, "table": table, "key": key, "include_vector": include_vector}
        # A missing table is a 404 too: then no key exists.
        answer = yield Request("POST", "/v1/vector/get", json=body, none_on_404=True)
        if answer is not None:
            out.append(VectorRecord.from_json(answer))
    return out


def _delete(keys: Optional[List[str]], filter: Optional[Mapping[str, Any]], keyspace: str, table: str, max_items: int) -> Op:
    if (keys is None) == (filter is None):
        raise TypeError("delete takes keys or filter (one of them)")
    if filter is not None:
        answer = yield Request("POST", "/v1/vector/delete", json={"keyspace": keyspace, "table": table, "filter": dict(filter)})
        return int(answer["deleted"])
    deleted = 0
    for part in chunks(keys or [], max_items):
        answer = yield Request("POST", "/v1/vector/delete", json={"keyspace": keyspace, "table": table, "keys": list(part)})
        deleted += int(answer["deleted"])
    return deleted


EMBED_INPUTS = 2048


def _embed(texts: List[str], model: Optional[str]) -> Op:
    out: List[List[float]] = []
    for part in chunks(texts, EMBED_INPUTS):
        answer = yield Request("POST", "/v1/embeddings", json=_without_none({"input": list(part), "model": model}))
        out.extend(d["embedding"] for d in sorted(answer["data"], key=lambda d: d["index"]))
    return out


class Client(_Api):
    """Blocking client. Use as a context manager, or call ``close()``."""

    def __init__(self, url: str = "http://127.0.0.1:8080", api_key: Optional[str] = None, *,
                 transport: Optional[httpx.BaseTransport] = None, **options: Any) -> None:
        super().__init__(url, api_key, **options)
        self._http = httpx.Client(base_url=self.url, headers=self._headers, timeout=self._timeout, transport=transport)
        self._driver = SyncDriver(self._http, self.retry)

    def _run(self, op: Op) -> Any:
        return self._driver.run(op)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncClient(_Api):
    """Asyncio client: every method returns an awaitable. Use ``async with``, or ``await aclose()``."""

    def __init__(self, url: str = "http://127.0.0.1:8080", api_key: Optional[str] = None, *,
                 transport: Optional[httpx.AsyncBaseTransport] = None, **options: Any) -> None:
        super().__init__(url, api_key, **options)
        self._http = httpx.AsyncClient(base_url=self.url, headers=self._headers, timeout=self._timeout, transport=transport)
        self._driver = AsyncDriver(self._http, self.retry)

    def _run(self, op: Op) -> Any:
        return self._driver.run(op)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
