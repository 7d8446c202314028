"""The size policy: how many tokens a chunk should hold."""

from __future__ import annotations

from dataclasses import dataclass

from chunker.errors import InvalidMetadata


@dataclass(frozen=True, slots=True)
class SizePolicy:
    """Target chunk size in tokens (see ``chunker.tokens.count_tokens``).

    A section above ``max_tokens`` is split at block boundaries; a section
    below ``min_tokens`` absorbs its own small subsections while the result
    stays within ``max_tokens``.
    """

    min_tokens: int = 300
    max_tokens: int = 800

    def __post_init__(self) -> None:
        if self.min_tokens < 0:
            raise InvalidMetadata(f"SizePolicy.min_tokens must be >= 0, got {self.min_tokens!r}")
        if self.max_tokens < 1 or self.max_tokens < self.min_tokens:
            raise InvalidMetadata(
                f"SizePolicy.max_tokens must be >= 1 and >= min_tokens ({self.min_tokens}), "
                f"got {self.max_tokens!r}"
            )
