"""search_policy: where ``serve`` listens, the callers' keys, the dense views, the
threshold, the reranker and the search run log (docs/search.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

from embeddings.registry import ENCODER_NAMES
from embeddings.views import parse_view_specs


class SearchSettings(BaseModel):
    """The search section of ``Settings``."""

    search_host: str = Field("127.0.0.1", description="Where `serve` listens (POST /search, /mcp).")
    search_port: int = Field(8090, ge=0, le=65535)
    search_api_keys: SecretStr | None = Field(
        None,
        description="API keys of the search callers and their permission labels, as JSON: "
        '{"<key-id>": {"key": "<secret, 16+ bytes>", "labels": ["public", "agents"]}}. '
        "A caller's labels come from its key, never from its request.",
    )
    search_api_keys_file: Path | None = Field(
        None, description="The same JSON in a file (a mounted secret); set it or search_api_keys, "
        "not both."
    )
    mcp_api_key: SecretStr | None = Field(
        None, description="`policy-indexer mcp` (stdio): the key (one of search_api_keys) whose "
        "labels the process's one caller gets.",
    )
    search_encoder: Literal["minilm", "hashing", "none"] = Field(
        "minilm",
        description="Dense leg: 'minilm' (int8 all-MiniLM-L6-v2, shipped in a package, CPU), "
        "'hashing' (a small deterministic encoder, no model), 'none' (keyword leg only).",
    )
    encoders: str | None = Field(
        None, description="Dense views, one dense leg each, fused: a comma-separated list of "
        "NAME[+wWORDS[sSTRIDE]][*WEIGHT] (NAME: minilm, bge-small, e5-small, hashing; "
        "+wWORDS: the chunk cut into windows of WORDS words, scored by its best window; "
        "*WEIGHT: the leg's share in the fusion). The first is the primary: its cosine is "
        "the confidence. Unset: the chosen default (docs/search.md); empty: keyword only.",
    )
    search_threshold: float | None = Field(
        None, description="The 'no document' threshold; None: the measured default."
    )
    reranker_path: Path | None = Field(
        None, description="An ONNX cross-encoder (its tokenizer.json beside it) that rescores "
        "the fused top; its best score is the confidence. Unset: no reranker.",
    )
    reranker_sha256: str | None = Field(
        None, pattern=r"^[0-9a-fA-F]{64}$",
        description="The sha256 of the reranker_path file, checked at start (required with it).",
    )
    reranker_threshold: float | None = Field(
        None, description="The reranker's 'no document' threshold, on its own logit scale "
        "(required with reranker_path; choose it with `policy-indexer eval`).",
    )
    reranker_candidates: int = Field(
        30, ge=1, le=200, description="How many of the fused top the reranker rescores.")
    reranker_max_length: int = Field(
        512, ge=8, le=8192, description="Tokens of a question/passage pair the reranker reads "
        "(within its model's positions: checked at start).",
    )
    search_metrics_token: SecretStr | None = Field(
        None, description="GET /metrics on the search port needs 'Authorization: Bearer "
        "<this>' (16+ bytes). Unset: /metrics there is 404, and the process's metrics are "
        "on its loopback metrics server only (metrics_host:metrics_port).",
    )
    search_metrics_document_ids: bool = Field(
        True, description="policy_indexer_search_document_retrievals_total{document_id}; "
        "false: no per-document series (no document id, restricted ones included, in a scrape).",
    )
    search_runs_retention_days: int = Field(
        30, ge=1, le=3650, description="Search runs (each answer's run_id, what "
        "check_citations checks a reply against) older than this many days are removed by "
        "the hourly sweep.",
    )
    search_runs_max: int = Field(
        1_000_000, ge=1, description="The sweep keeps at most this many search runs (the "
        "newest).",
    )

    @field_validator("encoders")
    @classmethod
    def _known_views(cls, value: str | None) -> str | None:
        if value is not None:
            names = {spec.name for spec in parse_view_specs(value)} - set(ENCODER_NAMES)
            if names:
                raise ValueError(f"unknown encoder {sorted(names)}; known: "
                                 f"{', '.join(ENCODER_NAMES)}")
        return value

    @field_validator("search_metrics_token")
    @classmethod
    def _metrics_token_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().encode("utf-8")) < 16:
            raise ValueError("search_metrics_token needs at least 16 bytes")
        return value

    @model_validator(mode="after")
    def _reranker_complete(self) -> Self:
        given = [name for name in ("reranker_sha256", "reranker_threshold")
                 if getattr(self, name) is not None]
        if self.reranker_path is None:
            if given:
                raise ValueError(f"{' and '.join(given)} set without reranker_path")
        elif len(given) < 2:
            missing = {"reranker_sha256", "reranker_threshold"} - set(given)
            raise ValueError(f"reranker_path needs {' and '.join(sorted(missing))} (a "
                             "cross-encoder's scale is its own: no default threshold)")
        return self
