"""Chunk and query embeddings: encoders, a content-addressed cache, the vector backfill.

Issue 17, item 5; docs/embeddings.md says how the parts fit.
"""
