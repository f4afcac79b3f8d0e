"""LangChain's own standard suite (langchain-tests) against the real server. The suite brings
its deterministic fake embeddings (6 dimensions), so this runs the client-side embedding path."""
from __future__ import annotations

from typing import Iterator

import pytest
from langchain_tests.integration_tests.vectorstores import VectorStoreIntegrationTests

from langchain_vss import VssVectorStore

from .conftest import Server, unique


class TestVssVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture()
    def vectorstore(self, server: Server, keyspace: str) -> Iterator[VssVectorStore]:  # type: ignore[override]
        # A table of its own per test: empty, and created by the first write with the fake
        # embeddings' dimension.
        store = VssVectorStore(self.get_embeddings(), url=server.url, api_key=server.admin_key, keyspace=keyspace, table=unique("lc"))
        try:
            yield store
        finally:
            store.close()
