"""Typed answers of the API. Each keeps the server's whole answer in ``raw``, so fields the
server adds later are reachable before the client names them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


def _floats(v: Any) -> Optional[List[float]]:
    return [float(x) for x in v] if isinstance(v, list) else None


@dataclass
class Match:
    key: str
    score: float
    metadata: Dict[str, Any]
    vector: Optional[List[float]] = None
    # Per-list scores ({semantic, lexical, rerank?}) in lexical and hybrid searches.
    scores: Optional[Dict[str, Optional[float]]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def text(self) -> Optional[str]:
        t = self.metadata.get("text")
        return t if isinstance(t, str) else None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Match":
        return cls(key=d["key"], score=float(d["score"]), metadata=dict(d.get("metadata") or {}),
                   vector=_floats(d.get("vector")), scores=d.get("scores"), raw=d)


@dataclass
class SearchResult:
    matches: List[Match]
    query: Optional[str]
    keyspace: str
    table: str
    model_name: Optional[str]
    metric: Optional[str]
    mode: Optional[str] = None
    note: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "SearchResult":
        return cls(matches=[Match.from_json(m) for m in d.get("matches", [])], query=d.get("query"),
                   keyspace=d["keyspace"], table=d["table"], model_name=d.get("model_name"),
                   metric=d.get("metric"), mode=d.get("mode"), note=d.get("note"), raw=d)


@dataclass
class VectorRecord:
    key: str
    metadata: Dict[str, Any]
    text: Optional[str]
    vector: Optional[List[float]] = None
    # When the row expires (ISO 8601, UTC); None: never, or a server without TTLs.
    expires_at: Optional[str] = None

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "VectorRecord":
        return cls(key=d["key"], metadata=dict(d.get("metadata") or {}), text=d.get("text"), vector=_floats(d.get("vector")),
                   expires_at=d.get("expires_at"))


@dataclass
class VectorPage:
    vectors: List[VectorRecord]
    cursor: Optional[str]

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "VectorPage":
        return cls(vectors=[VectorRecord.from_json(v) for v in d.get("vectors", [])], cursor=d.get("cursor"))


@dataclass
class WriteResult:
    """What an upsert wrote: ``keys`` in the order of the items, ``requests`` how many batches."""

    keyspace: str
    table: str
    written: int
    keys: List[str]
    requests: int = 1


@dataclass
class TableInfo:
    table: str
    dimension: int
    metric: str
    model: Optional[str]
    row_count: Optional[int]
    # Seconds until rows written without a TTL expire; None: never.
    default_ttl_seconds: Optional[int] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "TableInfo":
        return cls(table=d["table"], dimension=int(d["dimension"]), metric=d["metric"], model=d.get("model"),
                   row_count=d.get("row_count"), default_ttl_seconds=d.get("default_ttl_seconds"), raw=d)


@dataclass
class KeyspaceInfo:
    keyspace: str
    owner: Optional[str]
    tables: List[TableInfo]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "KeyspaceInfo":
        return cls(keyspace=d["keyspace"], owner=d.get("owner"), tables=[TableInfo.from_json(t) for t in d.get("tables", [])], raw=d)


@dataclass
class FileInfo:
    keyspace: str
    table: str
    name: str
    type: str
    size: int
    chunks: int
    sha256: str
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "FileInfo":
        return cls(keyspace=d["keyspace"], table=d["table"], name=d["name"], type=d["type"], size=int(d["size"]),
                   chunks=int(d["chunks"]), sha256=d["sha256"], raw=d)


@dataclass
class ApiKey:
    """A key as listed; ``key`` (the secret) only in the answer that made it."""

    key_id: str
    permissions: Optional[str]
    resources: List[str]
    key: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "ApiKey":
        return cls(key_id=d["key_id"], permissions=d.get("permissions"), resources=list(d.get("resources") or []),
                   key=d.get("key"), raw=d)
