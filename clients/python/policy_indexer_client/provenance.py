"""A passage's provenance as a flat-ish mapping of JSON values: the metadata of a LangChain
``Document`` and of a LlamaIndex node, the same keys in both.

Every field of the passage but its text (which is the document's content), dates as
ISO strings, plus the ``run_id`` of the search that returned it (for
``check_citations``): title, document_id, clause, version, chunk_id, heading_path,
scope, access_labels, valid_from, valid_to, effective_date, changed_at, link,
language, score, via, neighbour_of, attributes, freshness, run_id.
"""

from __future__ import annotations

from typing import Any

from policy_indexer_client.models import Passage

# What a model needs to cite a passage and judge whether it applies; the rest
# (ids, scores, labels) is for code. The LlamaIndex retriever shows only these to the LLM.
CITATION_KEYS = ("title", "document_id", "clause", "version", "scope", "valid_from",
                 "valid_to", "effective_date", "link")


def passage_metadata(passage: Passage, run_id: str | None) -> dict[str, Any]:
    """The passage's provenance, JSON values only."""
    metadata = passage.model_dump(mode="json", exclude={"text"})
    metadata["run_id"] = run_id
    return metadata
