"""The limits every HTTP server of the project runs under (the webhook receiver and the
search server): slow or too many clients (``foundation.http.HttpLimits``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from foundation.http.limits import (
    BODY_TIMEOUT_SECONDS,
    HEADER_TIMEOUT_SECONDS,
    KEEP_ALIVE_SECONDS,
    MAX_CONNECTIONS,
    HttpLimits,
)


class ServerSettings(BaseModel):
    """The servers section of ``Settings``."""

    http_header_timeout_seconds: float = Field(
        HEADER_TIMEOUT_SECONDS, gt=0,
        description="Webhook and search servers: a request's headers must arrive "
        "within this (an idle connection is closed after it too).")
    http_body_timeout_seconds: float = Field(
        BODY_TIMEOUT_SECONDS, gt=0,
        description="Webhook and search servers: a request's whole body must "
        "arrive within this after its headers.")
    http_keep_alive_seconds: float = Field(
        KEEP_ALIVE_SECONDS, ge=1,
        description="Webhook and search servers: an idle kept-alive connection is "
        "closed after this.")
    http_max_connections: int = Field(
        MAX_CONNECTIONS, ge=1,
        description="Webhook and search servers: connections at once; one more "
        "closes the one waiting longest for its headers. Keep it below the fd limit.")

    def http_limits(self) -> HttpLimits:
        """The limits every HTTP server of the project runs under (``foundation.http``)."""
        return HttpLimits(
            header_timeout_s=self.http_header_timeout_seconds,
            body_timeout_s=self.http_body_timeout_seconds,
            keep_alive_s=self.http_keep_alive_seconds,
            max_connections=self.http_max_connections,
        )
