"""vss.Client against a real server (the real model): every method, the errors' codes, writes
split into batches within the server's limits, uploads."""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, List

import httpx
import pytest

import vss

from .conftest import Server, unique

DOCS = [
    {"key": "cat", "text": "A cat is lying on a sofa.", "metadata": {"topic": "animals", "n": 1}},
    {"key": "bread", "text": "Let the dough rise before baking the bread.", "metadata": {"topic": "food", "n": 2}},
    {"key": "car", "text": "The mechanic replaced the brakes of my car.", "metadata": {"topic": "vehicles", "n": 3}},
]


class CountingTransport(httpx.HTTPTransport):
    """Records every request the client sends (path and JSON body)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: List[Any] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.read()) if request.headers.get("content-type") == "application/json" else None
        self.sent.append((request.url.path, body, len(request.content)))
        return super().handle_request(request)


def test_health_and_env(client: vss.Client) -> None:
    assert client.health()["status"] == "ok"
    env = client.env()
    assert env["limits"]["batch_items"] == vss.client.MAX_BATCH_ITEMS
    assert env["limits"]["body_bytes"] == vss.client.MAX_BODY_BYTES


def test_text_upsert_then_search_by_meaning(client: vss.Client, keyspace: str, table: str) -> None:
    written = client.upsert(DOCS, keyspace=keyspace, table=table)
    assert written.keys == ["cat", "bread", "car"] and written.written == 3 and written.requests == 1
    result = client.search("a kitten on the couch", keyspace=keyspace, table=table, final_top_k=2)
    assert [m.key for m in result.matches][0] == "cat"
    top = result.matches[0]
    assert top.text == "A cat is lying on a sofa." and top.metadata["topic"] == "animals"
    assert top.score > result.matches[1].score
    filtered = client.search("a kitten on the couch", keyspace=keyspace, table=table, filter={"n": {"$gte": 2}})
    assert {m.key for m in filtered.matches} == {"bread", "car"}
    assert client.count(keyspace=keyspace, table=table) == 3
    assert client.count(keyspace=keyspace, table=table, filter={"topic": "food"}) == 1


def test_vectors_get_list_delete(client: vss.Client, keyspace: str, table: str) -> None:
    items = [{"key": f"k{i:02d}", "vector": [1.0, float(i), 0.5, -0.25], "metadata": {"even": i % 2 == 0}} for i in range(10)]
    client.upsert(items, keyspace=keyspace, table=table)
    row = client.get("k03", keyspace=keyspace, table=table)
    assert row.vector == [1.0, 3.0, 0.5, -0.25] and row.metadata == {"even": False} and row.text is None
    assert client.get("k03", keyspace=keyspace, table=table, include_vector=False).vector is None
    many = client.get_many(["k05", "nope", "k01"], keyspace=keyspace, table=table)
    assert [r.key for r in many] == ["k05", "k01"]
    assert client.get_many(["x"], keyspace=keyspace, table=unique("missing")) == []

    keys: List[str] = []
    cursor = None
    while True:
        page = client.list_vectors(keyspace=keyspace, table=table, cursor=cursor, limit=4)
        assert len(page.vectors) <= 4
        keys += [v.key for v in page.vectors]
        cursor = page.cursor
        if cursor is None:
            break
    assert keys == [f"k{i:02d}" for i in range(10)]

    by_vector = client.search(vector=[1.0, 7.0, 0.5, -0.25], keyspace=keyspace, table=table, final_top_k=1, include_vector=True)
    assert by_vector.matches[0].key == "k07" and by_vector.matches[0].vector == [1.0, 7.0, 0.5, -0.25]
    assert client.delete(["k00", "k01", "nope"], keyspace=keyspace, table=table) == 2
    assert client.delete(filter={"even": True}, keyspace=keyspace, table=table) == 4
    assert client.count(keyspace=keyspace, table=table) == 4
    with pytest.raises(TypeError):
        client.delete(keyspace=keyspace, table=table)


def test_write_one_row_json_and_binary_vectors_store_the_same(server: Server, keyspace: str, table: str) -> None:
    v = [0.1, 0.2, 0.3]
    with vss.Client(server.url, server.admin_key, binary_vectors=False) as as_json, vss.Client(server.url, server.admin_key) as as_b64:
        assert as_json.write(keyspace=keyspace, table=table, key="j", vector=v, metadata={"a": 1}) == "j"
        assert as_b64.write(keyspace=keyspace, table=table, key="b", vector=v, text="stored text") == "b"
        assert as_json.get("j", keyspace=keyspace, table=table).vector == as_b64.get("b", keyspace=keyspace, table=table).vector
        assert as_b64.get("b", keyspace=keyspace, table=table).text == "stored text"
        generated = as_b64.write(keyspace=keyspace, table=table, vector=[0.3, 0.2, 0.1])
        assert generated and as_b64.get(generated, keyspace=keyspace, table=table).key == generated


def test_2500_items_go_in_three_requests(server: Server, keyspace: str, table: str) -> None:
    transport = CountingTransport()
    with vss.Client(server.url, server.admin_key, transport=transport) as c:
        items = [{"key": f"r{i}", "vector": [1.0, i / 2500.0]} for i in range(2500)]
        result = c.upsert(items, keyspace=keyspace, table=table)
        batches = [body for path, body, _ in transport.sent if path == "/v1/vector/batch"]
        assert [len(b["vectors"]) for b in batches] == [1000, 1000, 500]
        assert result.requests == 3 and result.written == 2500 and result.keys == [f"r{i}" for i in range(2500)]
        assert c.count(keyspace=keyspace, table=table) == 2500


def test_bodies_over_32_mib_are_split_by_size(server: Server, keyspace: str, table: str) -> None:
    # 600 rows of ~60 KB metadata: 36 MB in all, over the server's 32 MiB body limit, under 1,000 items.
    transport = CountingTransport()
    filler = "x" * 60_000
    with vss.Client(server.url, server.admin_key, transport=transport) as c:
        items = [{"key": f"big{i}", "vector": [1.0, float(i)], "metadata": {"filler": filler}} for i in range(600)]
        result = c.upsert(items, keyspace=keyspace, table=table)
        sizes = [size for path, _, size in transport.sent if path == "/v1/vector/batch"]
        assert len(sizes) == 2 and all(s <= vss.client.MAX_BODY_BYTES for s in sizes)
        assert result.written == 600 and c.count(keyspace=keyspace, table=table) == 600


def test_keyspaces_and_tables(client: vss.Client) -> None:
    name = unique("ks")
    created = client.create_keyspace(name)
    assert created.keyspace == name and [t.table for t in created.tables] == ["vector"]
    assert created.tables[0].dimension == 384
    generated = client.create_keyspace()
    assert generated.keyspace.startswith("ks_")
    table = client.create_table(name, "small", dimension=8, metric="dot_product")
    assert (table.table, table.dimension, table.metric) == ("small", 8, "dot_product")
    listed = {k.keyspace: k for k in client.list_keyspaces()}
    assert {t.table for t in listed[name].tables} == {"vector", "small"}
    with pytest.raises(vss.ConflictError) as e:
        client.create_keyspace(name)
    assert e.value.code == "already_exists" and e.value.status == 409
    with pytest.raises(vss.ConflictError):
        client.create_table(name, "small", dimension=8)


def test_errors_carry_the_problem(server: Server, client: vss.Client, keyspace: str, table: str) -> None:
    with vss.Client(server.url, "vss_not_a_key") as bad:
        with pytest.raises(vss.AuthenticationError) as auth:
            bad.count(keyspace=keyspace, table=table)
    assert (auth.value.status, auth.value.code) == (401, "unauthenticated") and auth.value.request_id

    with pytest.raises(vss.ValidationError) as invalid:
        client.search("x", keyspace=keyspace, table=table, final_top_k=0, initial_top_k=0)
    assert {e["path"] for e in invalid.value.errors} == {"/body/final_top_k", "/body/initial_top_k"}
    assert invalid.value.status == 400 and "final_top_k" in str(invalid.value)

    client.write(keyspace=keyspace, table=table, key="a", vector=[1.0, 2.0])
    with pytest.raises(vss.DimensionMismatchError) as dim:
        client.upsert([{"key": "b", "vector": [1.0, 2.0, 3.0]}], keyspace=keyspace, table=table)
    assert dim.value.code == "dimension_mismatch" and dim.value.errors[0]["path"] == "/body/vectors/0/vector_base64"

    with pytest.raises(vss.NotFoundError) as missing:
        client.get("nope", keyspace=keyspace, table=table)
    assert missing.value.code == "vector_not_found"
    with pytest.raises(vss.NotFoundError) as no_ks:
        client.count(keyspace=unique("nothere"), table=table)
    assert no_ks.value.code == "keyspace_not_found"

    with pytest.raises(TypeError):
        client.upsert([{"key": "c", "vectr": [1.0]}], keyspace=keyspace, table=table)


def test_keys_users_and_a_real_rate_limit(server: Server, client: vss.Client, keyspace: str) -> None:
    reader = client.create_key(permissions="Read", resources=[keyspace], name="reader")
    assert reader.key and reader.permissions == "Read" and reader.resources == [keyspace]
    assert reader.key_id in {k.key_id for k in client.list_keys()}
    with vss.Client(server.url, reader.key) as r:
        assert r.count(keyspace=keyspace, table="vector") == 0
        with pytest.raises(vss.PermissionDeniedError) as forbidden:
            r.write(keyspace=keyspace, table="vector", key="x", text="no")
        assert forbidden.value.code == "forbidden" and forbidden.value.status == 403
    rotated = client.rotate_key(reader.key_id)
    assert rotated.key and rotated.key != reader.key
    revoked = client.revoke_key(reader.key_id)
    assert revoked.raw["revoked_at"]
    with vss.Client(server.url, reader.key) as r:
        with pytest.raises(vss.AuthenticationError):
            r.me()

    user = client.create_user("Free user", f"{unique('u')}@example.com")
    assert user["account_id"] in {u["account_id"] for u in client.list_users()}
    free = client.create_key(permissions="Read", user_id=user["account_id"])
    # The server was started with VSS_FREE_REQUESTS_PER_MINUTE=5: without retries the sixth
    # request is the server's own 429.
    with vss.Client(server.url, free.key, max_retries=0) as f:
        with pytest.raises(vss.RateLimitError) as limited:
            for _ in range(10):
                f.me()
    assert limited.value.code == "rate_limited" and limited.value.status == 429
    assert limited.value.retry_after is not None and 0 < limited.value.retry_after <= 60


def test_embeddings(client: vss.Client) -> None:
    vectors = client.embed(["a cat on a sofa", "a kitten on a couch", "tax law"])
    assert len(vectors) == 3 and all(len(v) == 384 for v in vectors)
    dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
    assert dot(vectors[0], vectors[1]) > dot(vectors[0], vectors[2])


MARKDOWN = b"# Baking\n\nKnead the dough for ten minutes, then let it rise for an hour before baking the loaf.\n"


def test_uploads_from_a_path_bytes_and_a_file_object(client: vss.Client, keyspace: str, table: str, tmp_path: Path) -> None:
    path = tmp_path / "baking.md"
    path.write_bytes(MARKDOWN)
    from_path = client.upload(path, keyspace=keyspace, table=table)
    assert (from_path.name, from_path.type, from_path.size) == ("baking.md", "md", len(MARKDOWN)) and from_path.chunks >= 1
    from_bytes = client.upload(b"Tyres need the right pressure before a long drive.", filename="cars.txt", keyspace=keyspace, table=table)
    assert from_bytes.name == "cars.txt" and from_bytes.type == "txt"
    from_file = client.upload(io.BytesIO(b"Cats sleep most of the day."), filename="cats.txt", keyspace=keyspace, table=table, chunk_size=64)
    assert from_file.raw["chunk_size"] == 64
    with open(path, "rb") as handle:
        again = client.upload(handle, keyspace=keyspace, table=table)
    assert again.name == "baking.md" and again.raw["replaced"] is True

    names = {f.name for f in client.list_files(keyspace=keyspace, table=table)}
    assert names == {"baking.md", "cars.txt", "cats.txt"}
    assert client.download_file("baking.md", keyspace=keyspace, table=table) == MARKDOWN
    hit = client.search("how long should bread dough rise", keyspace=keyspace, table=table, final_top_k=1).matches[0]
    assert hit.metadata["source_file"] == "baking.md" and hit.metadata["source_type"] == "md"
    assert client.delete_file("cats.txt", keyspace=keyspace, table=table) == from_file.chunks
    with pytest.raises(vss.NotFoundError) as gone:
        client.download_file("cats.txt", keyspace=keyspace, table=table)
    assert gone.value.code == "file_not_found"
    with pytest.raises(vss.UnsupportedMediaTypeError) as png:
        client.upload(b"\x89PNG\r\n\x1a\n" + bytes(64), filename="x.png", keyspace=keyspace, table=table)
    assert png.value.code == "unsupported_media_type"


def test_metadata_record_joins_search_matches(client: vss.Client, keyspace: str, table: str) -> None:
    client.write_metadata("manual.pdf", keyspace=keyspace, table=table, raw_value="https://example.com/manual.pdf", source_type="pdf")
    client.write(keyspace=keyspace, table=table, key="m1", text="Press the red button to stop the machine.", metadata={"source_file": "manual.pdf"})
    match = client.search("how do I stop it", keyspace=keyspace, table=table, final_top_k=1).matches[0]
    assert match.metadata["raw_value"] == "https://example.com/manual.pdf" and match.metadata["source_type"] == "pdf"


def test_ttl_fields_are_sent_and_expiry_read(client: vss.Client, keyspace: str, table: str) -> None:
    """A row's own TTL, a request's TTL for the items that name none, and a table default, read back."""
    from datetime import datetime, timedelta, timezone

    assert client.create_table(keyspace, table, dimension=4, default_ttl_seconds=86400).default_ttl_seconds == 86400
    client.write(keyspace=keyspace, table=table, key="own", vector=[1.0, 0.0, 0.0, 0.0], ttl_seconds=600)
    client.upsert([{"key": "req", "vector": [0.0, 1.0, 0.0, 0.0]},
                   {"key": "item", "vector": [0.0, 0.0, 1.0, 0.0], "ttl_seconds": 7200}],
                  keyspace=keyspace, table=table, ttl_seconds=3600)
    client.write(keyspace=keyspace, table=table, key="dflt", vector=[0.0, 0.0, 0.0, 1.0])
    now = datetime.now(timezone.utc)
    for key, seconds in [("own", 600), ("req", 3600), ("item", 7200), ("dflt", 86400)]:
        expires = client.get(key, keyspace=keyspace, table=table).expires_at
        assert expires is not None, key
        left = datetime.fromisoformat(expires.replace("Z", "+00:00")) - now
        assert abs(left - timedelta(seconds=seconds)) < timedelta(seconds=60), (key, expires)
    assert client.set_default_ttl(keyspace, table, None) is None
    client.write(keyspace=keyspace, table=table, key="dflt", vector=[0.0, 0.0, 0.0, 1.0])
    assert client.get("dflt", keyspace=keyspace, table=table).expires_at is None


def test_search_effort_is_sent(client: vss.Client, keyspace: str, table: str) -> None:
    client.upsert([{"key": f"e{i}", "vector": [1.0, float(i), 0.0, 0.0]} for i in range(5)], keyspace=keyspace, table=table)
    assert [m.key for m in client.search(vector=[1.0, 4.0, 0.0, 0.0], keyspace=keyspace, table=table, final_top_k=1, ef=16).matches] == ["e4"]
    with pytest.raises(vss.errors.ValidationError) as err:
        client.search(vector=[1.0, 0.0, 0.0, 0.0], keyspace=keyspace, table=table, ef=0)
    assert [e["path"] for e in err.value.errors] == ["/body/ef"]
