"""Python client for vss, the self-hostable vector search and storage service.

    import vss
    with vss.Client("http://127.0.0.1:8080", api_key="…") as client:
        client.upsert([{"key": "cat", "text": "A cat is lying on a sofa."}])
        client.search("a kitten on the couch", final_top_k=1)
"""
__version__ = "0.1.0"

from .client import DEFAULT_KEYSPACE, DEFAULT_TABLE, AsyncClient, Client
from .errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    DimensionMismatchError,
    InternalServerError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    QuotaExceededError,
    RateLimitError,
    ServiceUnavailableError,
    UnprocessableFileError,
    UnsupportedMediaTypeError,
    ValidationError,
    VssConnectionError,
    VssError,
)
from .models import ApiKey, FileInfo, KeyspaceInfo, Match, SearchResult, TableInfo, VectorPage, VectorRecord, WriteResult

__all__ = [
    "AsyncClient", "Client", "DEFAULT_KEYSPACE", "DEFAULT_TABLE",
    "VssError", "VssConnectionError", "BadRequestError", "ValidationError", "DimensionMismatchError",
    "AuthenticationError", "PermissionDeniedError", "QuotaExceededError", "NotFoundError", "ConflictError",
    "PayloadTooLargeError", "UnsupportedMediaTypeError", "UnprocessableFileError", "RateLimitError",
    "ServiceUnavailableError", "InternalServerError",
    "ApiKey", "FileInfo", "KeyspaceInfo", "Match", "SearchResult", "TableInfo", "VectorPage", "VectorRecord", "WriteResult",
]
