"""search_policy: the retrieval tool over the index; models in ``retrieval.models``."""
