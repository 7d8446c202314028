"""Chunk and query embeddings: encoders, a content-addressed cache, the vector backfill.

docs/embeddings.md says how the parts fit.
"""
