"""Splitting large writes into requests the server accepts: at most ``max_items`` records and
``max_bytes`` of JSON body each (the server's VSS_MAX_BATCH_ITEMS and VSS_MAX_BODY_BYTES)."""
from __future__ import annotations

import base64
import json
import struct
from typing import Any, Dict, Iterable, List, Mapping, Sequence

# Room for the body's envelope ({"keyspace":…,"table":…,"model_name":…,"vectors":[]}).
ENVELOPE_BYTES = 4096
ITEM_FIELDS = ("key", "vector", "vector_base64", "text", "metadata", "ttl_seconds")


def float32_base64(vector: Sequence[float]) -> str:
    """The vector's float32 values, little-endian, in standard base64 (the server's vector_base64)."""
    return base64.b64encode(struct.pack("<%df" % len(vector), *vector)).decode("ascii")


def to_record(item: Mapping[str, Any], binary: bool) -> Dict[str, Any]:
    unknown = set(item) - set(ITEM_FIELDS)
    if unknown:
        raise TypeError(f"unknown item field(s) {sorted(unknown)}; items take {', '.join(ITEM_FIELDS)}")
    record = {k: v for k, v in item.items() if v is not None}
    if binary and "vector" in record:
        record["vector_base64"] = float32_base64(record.pop("vector"))
    return record


def json_size(value: Any) -> int:
    # ensure_ascii: an upper bound on the UTF-8 body whatever the encoder's choice.
    return len(json.dumps(value, separators=(",", ":")))


def split_batches(records: Iterable[Dict[str, Any]], max_items: int, max_bytes: int) -> List[List[Dict[str, Any]]]:
    """Consecutive batches in order; one record larger than the budget travels alone (the server
    answers it 413)."""
    budget = max(1, max_bytes - ENVELOPE_BYTES)
    batches: List[List[Dict[str, Any]]] = []
    current: List[Dict[str, Any]] = []
    size = 0
    for r in records:
        n = json_size(r) + 1
        if current and (len(current) >= max_items or size + n > budget):
            batches.append(current)
            current, size = [], 0
        current.append(r)
        size += n
    if current:
        batches.append(current)
    return batches


def chunks(items: Sequence[Any], size: int) -> List[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
