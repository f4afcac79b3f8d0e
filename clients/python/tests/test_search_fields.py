"""What the client sends and reads for the search fields newer servers have (mode, fusion, mmr,
rerank, per-list scores, note), against a scripted server answering as docs/API.md describes."""
from __future__ import annotations

import base64
import struct

import vss

from .fake_server import FakeServer

HYBRID_ANSWER = {
    "query": "brakes", "keyspace": "k", "table": "t", "model_name": "all-MiniLM-L6-v2", "metric": "cosine",
    "mode": "hybrid", "fusion": {"method": "rrf", "k": 60}, "note": "the reranker timed out",
    "matches": [
        {"key": "car", "score": 0.032, "metadata": {"text": "new brakes"}, "scores": {"semantic": 0.71, "lexical": 3.2}},
        {"key": "bike", "score": 0.016, "metadata": {}, "scores": {"semantic": 0.55, "lexical": None}},
    ],
}


def test_hybrid_fields_are_sent_and_per_list_scores_read() -> None:
    with FakeServer([(200, {}, HYBRID_ANSWER)]) as f, vss.Client(f.url, "k") as c:
        result = c.search("brakes", keyspace="k", table="t", final_top_k=2, mode="hybrid", fusion={"method": "rrf", "k": 60},
                          mmr={"diversity": 0.3, "candidates": 50}, rerank=True, future_field=1)
        assert f.received[0].path == "/v1/search/"
        assert f.received[0].body == {"query": "brakes", "keyspace": "k", "table": "t", "final_top_k": 2, "mode": "hybrid",
                                      "fusion": {"method": "rrf", "k": 60}, "mmr": {"diversity": 0.3, "candidates": 50},
                                      "rerank": True, "future_field": 1}
    assert result.mode == "hybrid" and result.note == "the reranker timed out"
    assert [(m.key, m.scores) for m in result.matches] == [("car", {"semantic": 0.71, "lexical": 3.2}), ("bike", {"semantic": 0.55, "lexical": None})]
    assert result.matches[0].text == "new brakes" and result.raw["fusion"] == {"method": "rrf", "k": 60}


def test_search_vector_is_sent_as_exact_float32_base64() -> None:
    answer = dict(HYBRID_ANSWER, matches=[])
    v = [0.1, -2.5, 3.0e-8]
    with FakeServer([(200, {}, answer), (200, {}, answer)]) as f:
        with vss.Client(f.url, "k") as c:
            c.search(vector=v, keyspace="k", table="t")
        with vss.Client(f.url, "k", binary_vectors=False) as c:
            c.search(vector=v, keyspace="k", table="t")
        sent = f.received[0].body
        assert "vector" not in sent and "query" not in sent
        assert list(struct.unpack("<3f", base64.b64decode(sent["vector_base64"]))) == list(struct.unpack("<3f", struct.pack("<3f", *v)))
        assert f.received[1].body["vector"] == v and "vector_base64" not in f.received[1].body


def test_vector_store_sends_query_words_for_lexical_and_hybrid_modes() -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from langchain_vss import VssVectorStore

    answer = dict(HYBRID_ANSWER, matches=[])
    with FakeServer([(200, {}, answer)] * 3) as f:
        store = VssVectorStore(DeterministicFakeEmbedding(size=4), url=f.url, api_key="k", keyspace="k", table="t")
        store.similarity_search("brakes", k=2)
        store.similarity_search("brakes", k=2, mode="lexical")
        store.similarity_search("brakes", k=2, mode="hybrid")
        store.close()
    semantic, lexical, hybrid = (r.body for r in f.received)
    assert "vector_base64" in semantic and "query" not in semantic
    assert lexical["query"] == "brakes" and "vector_base64" not in lexical and lexical["mode"] == "lexical"
    assert hybrid["query"] == "brakes" and "vector_base64" in hybrid and hybrid["mode"] == "hybrid"
