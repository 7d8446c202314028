"""Language-aware analysis: the same terms for a chunk on every store, and for a query.

A leaf package (it imports nothing of the project), so the stores and the search
service share one definition of what a term is.
"""
