"""vss.AsyncClient against the real server: the same operations through the async driver,
several at once."""
from __future__ import annotations

import asyncio
import io
from typing import AsyncIterator

import pytest

import vss

from .conftest import Server


@pytest.fixture()
async def aclient(server: Server) -> AsyncIterator[vss.AsyncClient]:
    async with vss.AsyncClient(server.url, server.admin_key) as c:
        yield c


async def test_upsert_search_get_delete(aclient: vss.AsyncClient, keyspace: str, table: str) -> None:
    items = [{"key": f"n{i}", "vector": [1.0, float(i)]} for i in range(2500)]
    items += [{"key": "cat", "vector": [0.0, -1.0], "metadata": {"kind": "cat"}}]
    result = await aclient.upsert(items, keyspace=keyspace, table=table)
    assert result.requests == 3 and result.written == 2501
    counts = await asyncio.gather(
        aclient.count(keyspace=keyspace, table=table),
        aclient.count(keyspace=keyspace, table=table, filter={"kind": "cat"}),
    )
    assert counts == [2501, 1]
    found = await aclient.search(vector=[0.0, -1.0], keyspace=keyspace, table=table, final_top_k=1)
    assert found.matches[0].key == "cat" and found.matches[0].metadata == {"kind": "cat"}
    rows = await aclient.get_many(["cat", "missing", "n7"], keyspace=keyspace, table=table, include_vector=True)
    assert [(r.key, r.vector) for r in rows] == [("cat", [0.0, -1.0]), ("n7", [1.0, 7.0])]
    assert await aclient.delete([f"n{i}" for i in range(1500)], keyspace=keyspace, table=table) == 1500
    assert await aclient.count(keyspace=keyspace, table=table) == 1001
    with pytest.raises(vss.NotFoundError) as e:
        await aclient.get("n1", keyspace=keyspace, table=table)
    assert e.value.code == "vector_not_found"


async def test_text_search_with_the_real_model(aclient: vss.AsyncClient, keyspace: str, table: str) -> None:
    await aclient.upsert([
        {"key": "cat", "text": "A cat is lying on a sofa."},
        {"key": "bread", "text": "Let the dough rise before baking the bread."},
    ], keyspace=keyspace, table=table)
    result = await aclient.search("fresh loaves from the oven", keyspace=keyspace, table=table, final_top_k=1)
    assert result.matches[0].key == "bread"


async def test_keyspaces_and_uploads(aclient: vss.AsyncClient, keyspace: str, table: str, tmp_path) -> None:
    ks = await aclient.create_keyspace()
    assert ks.keyspace in {k.keyspace for k in await aclient.list_keyspaces()}
    path = tmp_path / "notes.txt"
    path.write_text("The train to Lyon leaves at nine from platform four.")
    a, b = await asyncio.gather(
        aclient.upload(str(path), keyspace=keyspace, table=table),
        aclient.upload(io.BytesIO(b"Water boils at one hundred degrees."), filename="water.txt", keyspace=keyspace, table=table),
    )
    assert (a.name, b.name) == ("notes.txt", "water.txt")
    assert await aclient.download_file("water.txt", keyspace=keyspace, table=table) == b"Water boils at one hundred degrees."
    assert {f.name for f in await aclient.list_files(keyspace=keyspace, table=table)} == {"notes.txt", "water.txt"}
    assert await aclient.delete_file("notes.txt", keyspace=keyspace, table=table) == a.chunks


async def test_async_errors(server: Server, keyspace: str) -> None:
    async with vss.AsyncClient(server.url, "vss_wrong") as bad:
        with pytest.raises(vss.AuthenticationError) as e:
            await bad.list_keyspaces()
    assert e.value.code == "unauthenticated"
