"""How long an HTTP client may take and how many may connect (``foundation.http.server``).

Apart from the server so that ``Settings.http_limits()`` builds one without
importing uvicorn (the CLI imports settings for every command).
"""

from __future__ import annotations

from dataclasses import dataclass

# The defaults, here once (the server settings take them).
HEADER_TIMEOUT_SECONDS = 10.0
BODY_TIMEOUT_SECONDS = 60.0
KEEP_ALIVE_SECONDS = 5.0
MAX_CONNECTIONS = 512


@dataclass(frozen=True)
class HttpLimits:
    """How long a client may take and how many may connect (see the module)."""

    header_timeout_s: float = HEADER_TIMEOUT_SECONDS
    body_timeout_s: float = BODY_TIMEOUT_SECONDS
    keep_alive_s: float = KEEP_ALIVE_SECONDS
    max_connections: int = MAX_CONNECTIONS

    def __post_init__(self) -> None:
        for name in ("header_timeout_s", "body_timeout_s", "keep_alive_s"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"HttpLimits.{name}={value!r}: must be above 0")
        if self.max_connections < 1:
            raise ValueError(
                f"HttpLimits.max_connections={self.max_connections!r}: must be at least 1"
            )
