"""reindex package."""
