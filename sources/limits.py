"""The sources' limits (CMS paging and timeout, folder file size): their one home."""

from __future__ import annotations

PAGE_SIZE = 500
MAX_PAGE_SIZE = 10_000
TIMEOUT_SECONDS = 10.0
# A folder file above this is listed unreadable (too_large) and never read.
MAX_FILE_BYTES = 5 * 1024 * 1024
