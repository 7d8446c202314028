"""A dense view: one encoder, and how a chunk's text is cut before it is encoded.

Search fuses one dense leg per view. A view either encodes the chunk's whole
text to embed (the encoder reads its first ``max_length`` tokens and drops the
rest), or cuts it into overlapping windows, each within the encoder's trained
length and each with the chunk's heading path in front, and stores one vector
per window; a chunk then scores by its best window, so evidence deep in a long
section is seen.

``view_id`` names what the stored vectors are: the encoder's ``model_id`` for a
whole-chunk view (the id vectors were stored under before views existed, so an
index keeps its vectors), ``<model_id>+w<words>s<stride>`` for windows. Stores
keep vectors per view id; a view that is removed from the configuration leaves
the others working, and one that is added is embedded by the backfill alone.

The windows are cut by ``windows`` (a function of the text to embed), given by
the layer that knows a chunk's layout (``store.search_terms.embed_windows``):
this layer does not know where a chunk's heading path ends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from embeddings.encoder import Encoder

Windows = Callable[[str], list[str]]

# The views when none are configured: chosen by bench/bench_retrieval.py on every public
# question set at once (docs/search.md "Dense views"): MiniLM over windows of 150 words, a
# new one every 75 (a window and its heading path fit MiniLM's 256 tokens), and the same
# windows through bge-small-en-v1.5, asked only questions in English (it is an English
# model: on the German and French sets it cost 2 questions each). Indexing cost 2.8x the
# single whole-chunk MiniLM view of before (bench/bench_encoder.py --views).
DEFAULT_VIEWS = "minilm+w150s75,bge-small+w150s75:en"

_VIEW_ID = re.compile(r"^[A-Za-z0-9._@+\-]{1,160}$")


def whole(text: str) -> list[str]:
    """The text to embed, not cut: one vector a chunk."""
    return [text]


@dataclass(frozen=True)
class WindowShape:
    """Windows of ``words`` words, a new one every ``stride`` words."""

    words: int
    stride: int

    def __post_init__(self) -> None:
        if not isinstance(self.words, int) or not 16 <= self.words <= 2000:
            raise ValueError(f"window words={self.words!r}: must be an integer from 16 to 2000")
        if not isinstance(self.stride, int) or not 1 <= self.stride <= self.words:
            raise ValueError(
                f"window stride={self.stride!r}: must be an integer from 1 to words "
                f"({self.words})"
            )

    @property
    def suffix(self) -> str:
        return f"+w{self.words}s{self.stride}"


@dataclass(frozen=True)
class DenseView:
    """An encoder and its cut; ``weight`` is the view's share in the fusion."""

    encoder: Encoder
    shape: WindowShape | None = None
    windows: Windows = field(default=whole, compare=False)
    weight: float = 1.0
    # Asked only questions in these languages (a model trained on English alone); None: all.
    languages: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if not (self.weight > 0):
            raise ValueError(f"view weight={self.weight!r}: must be > 0")
        if not _VIEW_ID.match(self.view_id):
            raise ValueError(f"view id {self.view_id!r}: letters, digits and ._@+- only")

    @property
    def view_id(self) -> str:
        return self.encoder.model_id + (self.shape.suffix if self.shape is not None else "")

    @property
    def model_id(self) -> str:
        return self.encoder.model_id

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def asks(self, language: str | None) -> bool:
        """Is this view asked a question in ``language`` (None: not known)?"""
        return self.languages is None or (language is not None and language in self.languages)


def distinct_encoders(views: Sequence[DenseView]) -> list[Encoder]:
    """Each encoder once (a question is encoded once per model, whatever its cuts)."""
    seen: dict[str, Encoder] = {}
    for view in views:
        seen.setdefault(view.model_id, view.encoder)
    return list(seen.values())


def check_distinct(views: Sequence[DenseView]) -> None:
    """Each view once; the first (the primary: its cosine is the confidence) for every
    language."""
    if views and views[0].languages is not None:
        raise ValueError(f"the first dense view {views[0].view_id!r} is the primary and must "
                         "answer every language: list a view without :LANGS first")
    ids = [v.view_id for v in views]
    doubles = sorted({i for i in ids if ids.count(i) > 1})
    if doubles:
        raise ValueError(f"dense views {doubles} are configured twice")


_SPEC = re.compile(r"^(?P<name>[a-z0-9][a-z0-9._-]*)(?:\+w(?P<words>\d+)(?:s(?P<stride>\d+))?)?"
                   r"(?:\*(?P<weight>\d+(?:\.\d+)?))?(?::(?P<langs>[a-z]{2,3}(?:/[a-z]{2,3})*))?$")


@dataclass(frozen=True)
class ViewSpec:
    """One entry of the configured list of views: ``NAME[+wWORDS[sSTRIDE]][*WEIGHT][:LANGS]``.

    ``minilm`` (whole chunks), ``minilm+w150s75`` (windows of 150 words every 75),
    ``bge-small+w150*0.5`` (stride half the window, half the weight),
    ``bge-small+w150:en`` (asked only questions in English; ``:en/es`` for two).
    ``NAME`` is an encoder's name (``embeddings`` builds it); the stride defaults to
    half the window.
    """

    name: str
    shape: WindowShape | None = None
    weight: float = 1.0
    languages: frozenset[str] | None = None

    @classmethod
    def parse(cls, text: str) -> ViewSpec:
        match = _SPEC.match(text.strip())
        if match is None:
            raise ValueError(
                f"dense view {text!r}: expected NAME[+wWORDS[sSTRIDE]][*WEIGHT][:LANGS], "
                "e.g. minilm or minilm+w150s75 or bge-small+w150*0.5:en"
            )
        shape = None
        if match["words"]:
            words = int(match["words"])
            stride = int(match["stride"]) if match["stride"] else max(1, words // 2)
            shape = WindowShape(words, stride)
        weight = float(match["weight"]) if match["weight"] else 1.0
        if not weight > 0:
            raise ValueError(f"dense view {text!r}: the weight must be > 0")
        languages = frozenset(match["langs"].split("/")) if match["langs"] else None
        return cls(match["name"], shape, weight, languages)


def parse_view_specs(text: str) -> list[ViewSpec]:
    """A comma-separated list of view specs (empty: no dense leg)."""
    specs = [ViewSpec.parse(part) for part in text.split(",") if part.strip()]
    keys = [(s.name, s.shape) for s in specs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"dense views {text!r}: a view is listed twice")
    if specs and specs[0].languages is not None:
        raise ValueError(f"dense views {text!r}: the first is the primary (its cosine is the "
                         "confidence) and must answer every language: no :LANGS on it")
    return specs
