"""How long an HTTP client may take and how many may connect (``foundation.http.server``).

Apart from the server so that ``Settings.http_limits()`` builds one without
importing uvicorn (the CLI imports settings for every command).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HttpLimits:
    """How long a client may take and how many may connect (see the module)."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    keep_alive_s: float = 5.0
    max_connections: int = 512

    def __post_init__(self) -> None:
        for name in ("header_timeout_s", "body_timeout_s", "keep_alive_s"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"HttpLimits.{name}={value!r}: must be above 0")
        if self.max_connections < 1:
            raise ValueError(
                f"HttpLimits.max_connections={self.max_connections!r}: must be at least 1"
            )
