"""``HttpLimits`` under its old name: it lives in ``foundation.http.limits``.

``Settings.http_limits()`` still imports it from here; once it imports
``foundation.http.limits``, this module can go.
"""

from __future__ import annotations

from foundation.http.limits import HttpLimits

__all__ = ["HttpLimits"]
