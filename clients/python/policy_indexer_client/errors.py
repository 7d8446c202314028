"""What a call can raise; every error names what went wrong, in the server's words
where the server gave them.

::

    PolicyIndexerError
     ├── ConfigurationError          no API key (argument or POLICY_INDEXER_API_KEY), bad URL
     ├── TransportError              the server could not be reached, or did not answer in time
     └── ApiError                    the server refused: .status, .error, .detail, .errors
          ├── AuthenticationError       401 (no key, not 'Bearer <key>', unknown key)
          ├── InvalidRequestError       400, 413, 415, 422 (.errors: each loc, msg, input)
          ├── UnknownRunError           404 unknown_run (never recorded, pruned, another key's)
          └── ServiceUnavailableError   503 or 429 still, after the retries
"""

from __future__ import annotations

from typing import Any


class PolicyIndexerError(Exception):
    """Anything this client raises."""


class ConfigurationError(PolicyIndexerError):
    """The client cannot be built as configured (the message names the setting)."""


class TransportError(PolicyIndexerError):
    """No HTTP answer: connection refused or reset, DNS, or a timeout."""


class ApiError(PolicyIndexerError):
    """An HTTP answer other than 200, with the server's ``error`` and ``detail``."""

    def __init__(self, status: int, error: str, detail: str, *, method_path: str,
                 errors: list[dict[str, Any]] | None = None, attempts: int = 1) -> None:
        self.status = status
        self.error = error
        self.detail = detail
        self.errors = errors or []
        self.attempts = attempts
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        super().__init__(f"{method_path}: {status} {error}{tries}: {detail}")


class AuthenticationError(ApiError):
    """401: the API key is missing, malformed or not known to the server."""


class InvalidRequestError(ApiError):
    """The request was refused as sent (400, 413, 415, 422); ``errors`` names the fields."""


class UnknownRunError(ApiError):
    """404 ``unknown_run``: the server has no run of this id for this key."""


class ServiceUnavailableError(ApiError):
    """503 (or 429) on the last attempt, or a ``Retry-After`` longer than allowed."""


def api_error(status: int, body: Any, text: str, *, method_path: str,
              attempts: int, note: str = "") -> ApiError:
    """The exception for a refusal: the class by status, the words from the body."""
    if isinstance(body, dict):
        error = str(body.get("error") or "error")
        detail = str(body.get("detail") or text[:300])
        errors = body.get("errors") if isinstance(body.get("errors"), list) else None
    else:
        error, detail, errors = "error", text[:300] or "(empty body)", None
    cls: type[ApiError] = ApiError
    if status == 401:
        cls = AuthenticationError
    elif status in (400, 413, 415, 422):
        cls = InvalidRequestError
    elif status == 404 and error == "unknown_run":
        cls = UnknownRunError
    elif status in (429, 503):
        cls = ServiceUnavailableError
    return cls(status, error, detail + note, method_path=method_path, errors=errors,
               attempts=attempts)
