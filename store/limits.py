"""The store's bulk limits: the one place their defaults live (settings and stores reuse them)."""

from __future__ import annotations

# A bulk request is cut at this many actions or this many bytes, whichever comes first.
BULK_MAX_ACTIONS = 500
BULK_MAX_BYTES = 5 * 1024 * 1024
