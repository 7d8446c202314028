"""chunker package."""
