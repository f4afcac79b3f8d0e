"""The OpenAI-compatible embeddings endpoint, through the official ``openai`` package."""
from __future__ import annotations

import math

import openai
import pytest
from openai import OpenAI

import vss

from .conftest import Server


def _cos(a, b) -> float:
    return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_openai_client_embeds_through_vss(server: Server) -> None:
    client = OpenAI(base_url=server.url + "/v1", api_key=server.admin_key, max_retries=0)
    texts = ["A cat is lying on a sofa.", "A kitten sleeps on the couch.", "Quarterly tax filing deadlines."]
    answer = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts)
    assert answer.model == "all-MiniLM-L6-v2"
    assert [d.index for d in answer.data] == [0, 1, 2]
    vectors = [d.embedding for d in answer.data]
    assert all(len(v) == 384 for v in vectors)
    assert _cos(vectors[0], vectors[1]) > _cos(vectors[0], vectors[2]) + 0.2
    assert answer.usage.prompt_tokens > len(texts)

    # The same vectors as the vss client's (the openai package asks for base64 and decodes it).
    with vss.Client(server.url, server.admin_key) as c:
        ours = c.embed(texts[:1])[0]
    assert max(abs(x - y) for x, y in zip(ours, vectors[0])) < 1e-6

    floats = client.embeddings.create(model="all-MiniLM-L6-v2", input="one text", encoding_format="float")
    assert len(floats.data) == 1 and len(floats.data[0].embedding) == 384


def test_openai_client_sees_the_errors(server: Server) -> None:
    bad = OpenAI(base_url=server.url + "/v1", api_key="vss_wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.embeddings.create(model="all-MiniLM-L6-v2", input=["x"])
    good = OpenAI(base_url=server.url + "/v1", api_key=server.admin_key, max_retries=0)
    with pytest.raises(openai.BadRequestError) as e:
        good.embeddings.create(model="text-embedding-3-small", input=["x"])
    assert e.value.body is not None and "unknown_model" in str(e.value.body) + str(e.value)
