"""The indexing core: change events into the store, below every edge that drives it.

The worker loops (``consumers/``) and the nightly reindex (``reindex/``) hand
events to one ``Indexer``; neither holds a copy of the rules.

- ``core``: ``Indexer.apply``, the one apply algorithm (batch-first; one event is
  a batch of one): guard, chunk, write chunks, write states, delete step.
- ``rules``: the version guard, the state transition and the lost-race take-back,
  each once.
- ``repair``: same-version repair and leftover removal, for the reindex.
- ``writer``: chunk writes in slices, overlapping the chunking.
- ``model``: ``Outcome``, ``Result``, ``Applied`` (results and counts), ``RepairResult``.
- ``errors``: ``PoisonEvent``.

It depends on the core packages (``chunker``, ``store``, ``deleter``, ``events``)
and on no edge.
"""
