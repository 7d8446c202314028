"""Helpers shared by tests: store factories, chunk builders, the index equality check."""
