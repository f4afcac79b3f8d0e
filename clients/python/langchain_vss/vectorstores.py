"""``VssVectorStore``: a LangChain ``VectorStore`` over one vss table.

Documents are rows: ``Document.id`` is the key, ``page_content`` the row's text, ``metadata``
its metadata (filters are vss filters on it). With ``embedding=None`` the server embeds texts and
queries with its model; with a LangChain ``Embeddings`` the vectors are computed here and written
as vectors (the table's dimension is then the embedding's).
"""
from __future__ import annotations

import asyncio
import uuid
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

import vss
from vss.models import Match, SearchResult

from ._mmr import mmr_order

# The server answers a match's row text inside its metadata under this name.
TEXT_FIELD = "text"


def _is_unknown_field(err: vss.VssError, field: str) -> bool:
    return err.status == 400 and any(e.get("path") == f"/body/{field}" and "not a known field" in str(e.get("message")) for e in err.errors)


def _is_missing_table(err: vss.VssError) -> bool:
    return isinstance(err, vss.NotFoundError) and err.code == "table_not_found"


def _document(key: str, text: Optional[str], metadata: Dict[str, Any]) -> Document:
    return Document(id=key, page_content=text or "", metadata=metadata)


def _from_match(m: Match) -> Tuple[Document, float, Optional[List[float]]]:
    metadata = dict(m.metadata)
    text = metadata.pop(TEXT_FIELD, None)
    return _document(m.key, text if isinstance(text, str) else None, metadata), m.score, m.vector


def _items(texts: Sequence[str], metadatas: Optional[Sequence[Optional[dict]]], ids: Optional[Sequence[Optional[str]]],
           vectors: Optional[List[List[float]]]) -> List[Dict[str, Any]]:
    if metadatas is not None and len(metadatas) != len(texts):
        raise ValueError(f"{len(metadatas)} metadatas for {len(texts)} texts")
    if ids is not None and len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
    items = []
    for i, text in enumerate(texts):
        metadata = dict((metadatas[i] if metadatas else None) or {})
        if TEXT_FIELD in metadata:
            raise ValueError(f"metadata field {TEXT_FIELD!r} is reserved: vss answers the document's text under it")
        key = (ids[i] if ids else None) or str(uuid.uuid4())
        item: Dict[str, Any] = {"key": key, "text": text, "metadata": metadata}
        if vectors is not None:
            item["vector"] = vectors[i]
        items.append(item)
    return items


class VssVectorStore(VectorStore):
    def __init__(self, embedding: Optional[Embeddings] = None, *, url: str, api_key: str,
                 keyspace: str = vss.DEFAULT_KEYSPACE, table: str = vss.DEFAULT_TABLE, **client_options: Any) -> None:
        """``client_options`` go to ``vss.Client`` and ``vss.AsyncClient`` (timeout, max_retries…)."""
        self.embedding = embedding
        self.keyspace = keyspace
        self.table = table
        self._url, self._api_key, self._options = url, api_key, client_options
        self.client = vss.Client(url, api_key, **client_options)
        self._async: Dict[int, vss.AsyncClient] = {}
        # None until a server answers whether it knows the search's `mmr` field.
        self._server_mmr: Optional[bool] = None

    @property
    def embeddings(self) -> Optional[Embeddings]:
        return self.embedding

    @property
    def aclient(self) -> vss.AsyncClient:
        """The async client of the running event loop (httpx's pools belong to one loop)."""
        loop = id(asyncio.get_running_loop())
        if loop not in self._async:
            self._async[loop] = vss.AsyncClient(self._url, self._api_key, **self._options)
        return self._async[loop]

    def _where(self) -> Dict[str, str]:
        return {"keyspace": self.keyspace, "table": self.table}

    # --- writing -------------------------------------------------------------------------------
    def add_texts(self, texts: Iterable[str], metadatas: Optional[List[dict]] = None, *, ids: Optional[List[Optional[str]]] = None,
                  **kwargs: Any) -> List[str]:
        texts = list(texts)
        vectors = self.embedding.embed_documents(texts) if self.embedding is not None and texts else None
        items = _items(texts, metadatas, ids, vectors)
        return self.client.upsert(items, **self._where()).keys if items else []

    async def aadd_texts(self, texts: Iterable[str], metadatas: Optional[List[dict]] = None, *,
                         ids: Optional[List[Optional[str]]] = None, **kwargs: Any) -> List[str]:
        texts = list(texts)
        vectors = await self.embedding.aembed_documents(texts) if self.embedding is not None and texts else None
        items = _items(texts, metadatas, ids, vectors)
        return (await self.aclient.upsert(items, **self._where())).keys if items else []

    def delete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        """Deletes by ids, or by ``filter=`` (a vss metadata filter)."""
        try:
            self.client.delete(ids, filter=kwargs.get("filter"), **self._where())
        except vss.NotFoundError as e:
            if not _is_missing_table(e):
                raise
        return True

    async def adelete(self, ids: Optional[List[str]] = None, **kwargs: Any) -> Optional[bool]:
        try:
            await self.aclient.delete(ids, filter=kwargs.get("filter"), **self._where())
        except vss.NotFoundError as e:
            if not _is_missing_table(e):
                raise
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> List[Document]:
        return [_document(r.key, r.text, r.metadata) for r in self.client.get_many(list(ids), **self._where())]

    async def aget_by_ids(self, ids: Sequence[str], /) -> List[Document]:
        rows = await self.aclient.get_many(list(ids), **self._where())
        return [_document(r.key, r.text, r.metadata) for r in rows]

    # --- searching -----------------------------------------------------------------------------
    def _search_body(self, query: Optional[str], vector: Optional[List[float]], k: int, filter: Optional[dict],
                     kwargs: Dict[str, Any]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"final_top_k": k, "filter": filter, **self._where(), **kwargs}
        mode = kwargs.get("mode")
        # Lexical search reads only the words; hybrid takes both (the vector for its semantic side).
        if vector is not None and mode != "lexical":
            body["vector"] = vector
        if query is not None and (vector is None or mode in ("lexical", "hybrid")):
            body["query"] = query
        return body

    def _query_vector(self, query: str) -> Optional[List[float]]:
        return self.embedding.embed_query(query) if self.embedding is not None else None

    async def _aquery_vector(self, query: str) -> Optional[List[float]]:
        return await self.embedding.aembed_query(query) if self.embedding is not None else None

    def _run_search(self, body: Dict[str, Any]) -> List[Tuple[Document, float, Optional[List[float]]]]:
        try:
            result: SearchResult = self.client.search(**body)
        except vss.NotFoundError as e:
            if _is_missing_table(e):  # nothing written yet
                return []
            raise
        return [_from_match(m) for m in result.matches]

    async def _arun_search(self, body: Dict[str, Any]) -> List[Tuple[Document, float, Optional[List[float]]]]:
        try:
            result: SearchResult = await self.aclient.search(**body)
        except vss.NotFoundError as e:
            if _is_missing_table(e):
                return []
            raise
        return [_from_match(m) for m in result.matches]

    def similarity_search_with_score(self, query: str, k: int = 4, filter: Optional[dict] = None, **kwargs: Any) -> List[Tuple[Document, float]]:
        """``kwargs`` pass through to the search (``mode="hybrid"``, ``rerank=True``…); scores are the server's."""
        return [(d, s) for d, s, _ in self._run_search(self._search_body(query, self._query_vector(query), k, filter, kwargs))]

    async def asimilarity_search_with_score(self, query: str, k: int = 4, filter: Optional[dict] = None,
                                            **kwargs: Any) -> List[Tuple[Document, float]]:
        found = await self._arun_search(self._search_body(query, await self._aquery_vector(query), k, filter, kwargs))
        return [(d, s) for d, s, _ in found]

    def similarity_search(self, query: str, k: int = 4, filter: Optional[dict] = None, **kwargs: Any) -> List[Document]:
        return [d for d, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, filter: Optional[dict] = None, **kwargs: Any) -> List[Document]:
        return [d for d, _ in await self.asimilarity_search_with_score(query, k, filter, **kwargs)]

    def similarity_search_with_score_by_vector(self, embedding: List[float], k: int = 4, filter: Optional[dict] = None,
                                               **kwargs: Any) -> List[Tuple[Document, float]]:
        return [(d, s) for d, s, _ in self._run_search(self._search_body(None, embedding, k, filter, kwargs))]

    async def asimilarity_search_with_score_by_vector(self, embedding: List[float], k: int = 4, filter: Optional[dict] = None,
                                                      **kwargs: Any) -> List[Tuple[Document, float]]:
        return [(d, s) for d, s, _ in await self._arun_search(self._search_body(None, embedding, k, filter, kwargs))]

    def similarity_search_by_vector(self, embedding: List[float], k: int = 4, filter: Optional[dict] = None, **kwargs: Any) -> List[Document]:
        return [d for d, _ in self.similarity_search_with_score_by_vector(embedding, k, filter, **kwargs)]

    async def asimilarity_search_by_vector(self, embedding: List[float], k: int = 4, filter: Optional[dict] = None,
                                           **kwargs: Any) -> List[Document]:
        return [d for d, _ in await self.asimilarity_search_with_score_by_vector(embedding, k, filter, **kwargs)]

    def _select_relevance_score_fn(self) -> Any:
        # Scores are cosine similarities in [-1, 1] (tables a first write creates are cosine).
        return lambda score: (score + 1.0) / 2.0

    # --- maximal marginal relevance --------------------------------------------------------------
    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                      filter: Optional[dict] = None, **kwargs: Any) -> List[Document]:
        """The server's ``mmr`` (diversity = 1 − lambda_mult over ``fetch_k`` candidates) where it
        has it; otherwise MMR here over the ``fetch_k`` best, with their vectors."""
        return self._mmr(query, self._query_vector(query), k, fetch_k, lambda_mult, filter, kwargs)

    async def amax_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                             filter: Optional[dict] = None, **kwargs: Any) -> List[Document]:
        return await self._ammr(query, await self._aquery_vector(query), k, fetch_k, lambda_mult, filter, kwargs)

    def max_marginal_relevance_search_by_vector(self, embedding: List[float], k: int = 4, fetch_k: int = 20,
                                                lambda_mult: float = 0.5, filter: Optional[dict] = None, **kwargs: Any) -> List[Document]:
        return self._mmr(None, embedding, k, fetch_k, lambda_mult, filter, kwargs)

    async def amax_marginal_relevance_search_by_vector(self, embedding: List[float], k: int = 4, fetch_k: int = 20,
                                                       lambda_mult: float = 0.5, filter: Optional[dict] = None,
                                                       **kwargs: Any) -> List[Document]:
        return await self._ammr(None, embedding, k, fetch_k, lambda_mult, filter, kwargs)

    def _server_lacks_mmr(self, err: vss.BadRequestError) -> bool:
        """Whether a 400 says the server has no ``mmr`` field (remembered: then MMR runs here)."""
        if _is_unknown_field(err, "mmr"):
            self._server_mmr = False
        return self._server_mmr is False

    def _mmr(self, query: Optional[str], vector: Optional[List[float]], k: int, fetch_k: int, lambda_mult: float,
             filter: Optional[dict], kwargs: Dict[str, Any]) -> List[Document]:
        if self._server_mmr is not False:
            mmr = {"diversity": 1.0 - lambda_mult, "candidates": max(fetch_k, k)}
            try:
                return [d for d, _, _ in self._run_search(self._search_body(query, vector, k, filter, {**kwargs, "mmr": mmr}))]
            except vss.BadRequestError as e:
                if not self._server_lacks_mmr(e):
                    raise
        if vector is None:
            vector = self.client.embed([query or ""])[0]
        body = self._search_body(None, vector, max(fetch_k, k), filter, {**kwargs, "include_vector": True})
        return self._local_mmr(vector, self._run_search(body), k, lambda_mult)

    async def _ammr(self, query: Optional[str], vector: Optional[List[float]], k: int, fetch_k: int, lambda_mult: float,
                    filter: Optional[dict], kwargs: Dict[str, Any]) -> List[Document]:
        if self._server_mmr is not False:
            mmr = {"diversity": 1.0 - lambda_mult, "candidates": max(fetch_k, k)}
            try:
                return [d for d, _, _ in await self._arun_search(self._search_body(query, vector, k, filter, {**kwargs, "mmr": mmr}))]
            except vss.BadRequestError as e:
                if not self._server_lacks_mmr(e):
                    raise
        if vector is None:
            vector = (await self.aclient.embed([query or ""]))[0]
        body = self._search_body(None, vector, max(fetch_k, k), filter, {**kwargs, "include_vector": True})
        return self._local_mmr(vector, await self._arun_search(body), k, lambda_mult)

    @staticmethod
    def _local_mmr(vector: List[float], found: List[Tuple[Document, float, Optional[List[float]]]], k: int,
                   lambda_mult: float) -> List[Document]:
        order = mmr_order(vector, [v or [] for _, _, v in found], k, lambda_mult)
        return [found[i][0] for i in order]

    # --- construction --------------------------------------------------------------------------
    @classmethod
    def from_texts(cls, texts: List[str], embedding: Optional[Embeddings] = None, metadatas: Optional[List[dict]] = None, *,
                   ids: Optional[List[str]] = None, url: str = "http://127.0.0.1:8080", api_key: str = "",
                   keyspace: str = vss.DEFAULT_KEYSPACE, table: str = vss.DEFAULT_TABLE, **kwargs: Any) -> "VssVectorStore":
        store = cls(embedding, url=url, api_key=api_key, keyspace=keyspace, table=table, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    def close(self) -> None:
        self.client.close()

    async def aclose(self) -> None:
        """Closes the sync client and the async one of the running event loop."""
        self.client.close()
        aclient = self._async.pop(id(asyncio.get_running_loop()), None)
        if aclient is not None:
            await aclient.aclose()
