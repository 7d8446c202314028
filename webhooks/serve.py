"""Serving an app with uvicorn, as every server of the project is served.

The guarded server (``GuardedH11``, ``server_config``, ``serve``) and the
server thread live in ``foundation.http.server``; these names stay for the
tests and the bench that import them from here.
"""

from __future__ import annotations

from foundation.http.server import GuardedH11, ServerThread, serve, server_config

__all__ = ["GuardedH11", "ServerThread", "serve", "server_config"]
