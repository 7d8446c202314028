"""policy-indexer: keeps a RAG index of a changing policy library correct and current.

This package is the edge of the system: the command line, the one settings
object and logging set-up. The core packages (``chunker``, ``store``,
``deleter``, ...) never import from here; values are handed to them.
"""

__version__ = "0.1.0"
