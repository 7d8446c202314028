"""Chunk and query embeddings: encoders, a content-addressed cache, the vector backfill (issue 17)."""
