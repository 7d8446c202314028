"""search_policy: the retrieval tool over the index (issue 17); models in ``retrieval.models``."""
