"""The errors the client raises: one hierarchy over the server's RFC 9457 problem bodies.

Branch on ``code`` (stable, the server's catalogue); ``detail`` is for people and ``errors``
names every bad field as a JSON pointer into the request.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional


class VssError(Exception):
    """Any failure talking to vss: a problem answer, or no answer at all (``status`` None)."""

    def __init__(
        self,
        detail: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        errors: Optional[List[Dict[str, Any]]] = None,
        body: Optional[Dict[str, Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.code = code
        self.errors: List[Dict[str, Any]] = list(errors or [])
        self.body: Dict[str, Any] = dict(body or {})
        self.retry_after = retry_after

    @property
    def request_id(self) -> Optional[str]:
        value = self.body.get("request_id")
        return value if isinstance(value, str) else None

    def __str__(self) -> str:
        head = f"{self.status} {self.code}: " if self.status is not None else ""
        return head + self.detail


class VssConnectionError(VssError):
    """The server could not be reached or did not answer in time."""


class BadRequestError(VssError):
    """400: the request is not valid (every bad field is in ``errors``)."""


class ValidationError(BadRequestError):
    """400 ``validation_failed``."""


class DimensionMismatchError(BadRequestError):
    """400 ``dimension_mismatch``: a vector's length differs from its table's dimension."""


class AuthenticationError(VssError):
    """401: missing, unknown or revoked key."""


class PermissionDeniedError(VssError):
    """403: the key does not allow this."""


class QuotaExceededError(PermissionDeniedError):
    """403 ``quota_exceeded``: a plan limit."""


class NotFoundError(VssError):
    """404: keyspace, table, vector, file, key or user not found."""


class ConflictError(VssError):
    """409 ``already_exists``."""


class PayloadTooLargeError(VssError):
    """413: a body or file over the server's limit."""


class UnsupportedMediaTypeError(VssError):
    """415: an unsupported file type."""


class UnprocessableFileError(VssError):
    """422: a file whose text extraction passed the server's memory or time limit."""


class RateLimitError(VssError):
    """429: too many requests; ``retry_after`` holds the server's Retry-After in seconds."""


class ServiceUnavailableError(VssError):
    """503: model loading, storage unreachable."""


class InternalServerError(VssError):
    """5xx other than 503."""


_BY_CODE = {
    "validation_failed": ValidationError,
    "dimension_mismatch": DimensionMismatchError,
    "quota_exceeded": QuotaExceededError,
}
_BY_STATUS = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    422: UnprocessableFileError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


def error_from_response(status: int, body: Any, text: str, retry_after: Optional[float]) -> VssError:
    """The error for a non-2xx answer; a body that is not a problem still gives its status."""
    problem: Dict[str, Any] = body if isinstance(body, dict) else {}
    code = problem.get("code") if isinstance(problem.get("code"), str) else None
    detail = problem.get("detail") or problem.get("title") or text[:500] or f"HTTP {status}"
    errors = problem.get("errors") if isinstance(problem.get("errors"), list) else None
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status) or (InternalServerError if status >= 500 else VssError)
    return cls(str(detail), status=status, code=code, errors=errors, body=problem, retry_after=retry_after)
