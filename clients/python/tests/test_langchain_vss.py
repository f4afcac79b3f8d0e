"""VssVectorStore with embedding=None: the server embeds with its real model, so these tests
can claim meaning. Plus the server-side MMR request, against a scripted server."""
from __future__ import annotations

from typing import Iterator

import pytest
from langchain_core.documents import Document

from langchain_vss import VssVectorStore

from .conftest import Server, unique
from .fake_server import FakeServer, problem

DOCS = [
    Document(id="cat", page_content="A cat is lying on a sofa.", metadata={"topic": "animals", "year": 2021}),
    Document(id="kitten", page_content="A small kitten sleeps on the couch.", metadata={"topic": "animals", "year": 2024}),
    Document(id="bread", page_content="Let the dough rise before baking the bread.", metadata={"topic": "food", "year": 2022}),
    Document(id="car", page_content="The mechanic replaced the brakes of my car.", metadata={"topic": "vehicles", "year": 2023}),
]


@pytest.fixture()
def store(server: Server, keyspace: str) -> Iterator[VssVectorStore]:
    s = VssVectorStore(url=server.url, api_key=server.admin_key, keyspace=keyspace, table=unique("lc"))
    try:
        yield s
    finally:
        s.close()


def test_server_side_embedding_finds_by_meaning(store: VssVectorStore) -> None:
    assert store.add_documents(DOCS) == ["cat", "kitten", "bread", "car"]
    docs = store.similarity_search("a pet resting on furniture", k=2)
    assert {d.id for d in docs} == {"cat", "kitten"}
    assert docs[0].metadata["topic"] == "animals" and "text" not in docs[0].metadata
    scored = store.similarity_search_with_score("fresh loaves from the oven", k=4)
    assert scored[0][0].id == "bread" and scored[0][0].page_content == DOCS[2].page_content
    assert [s for _, s in scored] == sorted((s for _, s in scored), reverse=True)
    relevance = store.similarity_search_with_relevance_scores("fresh loaves from the oven", k=1)
    assert 0.5 < relevance[0][1] <= 1.0

    assert [d.id for d in store.similarity_search("a pet", k=4, filter={"year": {"$gte": 2022}})][0] == "kitten"
    assert {d.id for d in store.similarity_search("anything", k=4, filter={"topic": "food"})} == {"bread"}

    vector = store.client.embed(["brakes and tyres"])[0]
    assert store.similarity_search_by_vector(vector, k=1)[0].id == "car"

    got = store.get_by_ids(["car", "missing", "cat"])
    assert [(d.id, d.page_content, d.metadata) for d in got] == [
        ("car", DOCS[3].page_content, DOCS[3].metadata), ("cat", DOCS[0].page_content, DOCS[0].metadata)]

    retriever = store.as_retriever(search_kwargs={"k": 1})
    assert retriever.invoke("dough and yeast")[0].id == "bread"
    threshold = store.as_retriever(search_type="similarity_score_threshold", search_kwargs={"score_threshold": 0.7, "k": 4})
    assert [d.id for d in threshold.invoke("a cat is lying on a sofa")][0] == "cat"

    assert store.delete(["cat"]) is True
    assert store.delete(filter={"topic": "vehicles"}) is True
    assert {d.id for d in store.similarity_search("anything", k=10)} == {"kitten", "bread"}


def test_mmr_on_the_server_and_computed_here(store: VssVectorStore) -> None:
    # Two near-copies and one other animal text: plain similarity takes both copies, MMR at
    # full diversity takes one copy and the other text.
    store.add_texts(["A cat is lying on a sofa.", "A cat is lying on the sofa.", "A dog runs in the park.", "Tax law is complex."],
                    ids=["a", "a2", "dog", "tax"])
    assert {d.id for d in store.similarity_search("a cat on a sofa", k=2)} == {"a", "a2"}
    # This server has the `mmr` field: the store asks it, and never falls back.
    picked = store.max_marginal_relevance_search("a cat on a sofa", k=2, fetch_k=4, lambda_mult=0.1)
    assert picked[0].id in {"a", "a2"} and picked[1].id not in {"a", "a2"}
    assert store._server_mmr is not False
    relevant = store.max_marginal_relevance_search("a cat on a sofa", k=2, fetch_k=4, lambda_mult=1.0)
    assert {d.id for d in relevant} == {"a", "a2"}
    # As against a server without it (a 400 naming /body/mmr remembered): computed here, alike.
    store._server_mmr = False
    picked = store.max_marginal_relevance_search("a cat on a sofa", k=2, fetch_k=4, lambda_mult=0.1)
    assert picked[0].id in {"a", "a2"} and picked[1].id not in {"a", "a2"}
    relevant = store.max_marginal_relevance_search("a cat on a sofa", k=2, fetch_k=4, lambda_mult=1.0)
    assert {d.id for d in relevant} == {"a", "a2"}


async def test_async_variants(store: VssVectorStore) -> None:
    assert await store.asimilarity_search("anything") == []
    ids = await store.aadd_texts([d.page_content for d in DOCS], [d.metadata for d in DOCS], ids=[d.id for d in DOCS])
    assert ids == ["cat", "kitten", "bread", "car"]
    assert (await store.asimilarity_search("a loaf of bread", k=1))[0].id == "bread"
    scored = await store.asimilarity_search_with_score("car repair", k=1)
    assert scored[0][0].id == "car" and scored[0][1] > 0.3
    assert [d.id for d in await store.aget_by_ids(["kitten", "nope"])] == ["kitten"]
    mmr = await store.amax_marginal_relevance_search("cats", k=2, fetch_k=4, lambda_mult=0.5)
    assert len(mmr) == 2 and mmr[0].id in {"cat", "kitten"}
    assert await store.adelete(["cat", "kitten"]) is True
    assert {d.id for d in await store.asimilarity_search("cats", k=4)} == {"bread", "car"}


def test_reserved_metadata_field_and_from_texts(server: Server, keyspace: str) -> None:
    store = VssVectorStore.from_texts(["Paris is the capital of France."], metadatas=[{"lang": "en"}], ids=["paris"],
                                      url=server.url, api_key=server.admin_key, keyspace=keyspace, table=unique("lc"))
    assert store.get_by_ids(["paris"])[0].metadata == {"lang": "en"}
    with pytest.raises(ValueError, match="reserved"):
        store.add_texts(["x"], [{"text": "clash"}])
    store.close()


def test_server_side_mmr_is_asked_for_when_the_server_has_it() -> None:
    answer = {"query": "q", "keyspace": "k", "table": "t", "model_name": "m", "metric": "cosine",
              "matches": [{"key": "x", "score": 0.9, "metadata": {"text": "X", "a": 1}}]}
    with FakeServer([(200, {}, answer)]) as f:
        store = VssVectorStore(url=f.url, api_key="k", keyspace="k", table="t")
        docs = store.max_marginal_relevance_search("q", k=3, fetch_k=30, lambda_mult=0.25, filter={"a": 1})
        assert docs == [Document(id="x", page_content="X", metadata={"a": 1})]
        assert len(f.received) == 1
        assert f.received[0].body == {"query": "q", "keyspace": "k", "table": "t", "final_top_k": 3, "filter": {"a": 1},
                                      "mmr": {"diversity": 0.75, "candidates": 30}}
        store.close()
    with FakeServer([(400, {}, dict(problem(400, "validation_failed"), errors=[{"path": "/body/query", "message": "bad"}]))]) as f:
        store = VssVectorStore(url=f.url, api_key="k", keyspace="k", table="t")
        # Another 400 is the caller's problem, not a sign the server lacks mmr.
        with pytest.raises(Exception) as e:
            store.max_marginal_relevance_search("q")
        assert getattr(e.value, "code", None) == "validation_failed" and store._server_mmr is None
        store.close()
