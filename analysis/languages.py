"""Which language a text is in: declared, from its path, or detected.

Detection uses ``py3langid`` (a small naive-Bayes model shipped inside the wheel,
no download), loaded on first use so importing this module stays cheap. It reads
only the first ``DETECT_CHARS`` characters, and remembers its answer by a hash of
them (``DETECT_CACHE_SIZE`` answers): the versions of a document mostly share their
opening, so a replay of a document's history classifies it about once, not once a
version.
"""

from __future__ import annotations

import re
import threading
from functools import cache
from typing import Any

from analysis.cache import CacheInfo, ContentCache, content_key
from analysis.langid_model import load_identifier

# ISO 639-1 codes that Snowball (PyStemmer) stems; unknown languages are not stemmed.
SNOWBALL: dict[str, str] = {
    "ar": "arabic", "ca": "catalan", "cs": "czech", "da": "danish", "de": "german",
    "el": "greek", "en": "english", "es": "spanish", "et": "estonian", "eu": "basque",
    "fi": "finnish", "fr": "french", "ga": "irish", "hi": "hindi", "hu": "hungarian",
    "hy": "armenian", "id": "indonesian", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "nl": "dutch", "no": "norwegian", "nb": "norwegian", "nn": "norwegian",
    "fa": "persian", "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian",
    "sr": "serbian", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
# A locale segment of a path: ``.../de/...``, ``.../pt-BR/...``, ``.../fr.md``.
_LOCALE = re.compile(r"^([a-z]{2})(?:[-_][A-Za-z]{2,4})?$")
_TAG = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$")
# Below this many letters a detector's guess is noise.
MIN_DETECT_LETTERS = 20
# Enough text for a sure guess (a paragraph or two); more only costs time (~0.5 ms a 1,500).
DETECT_CHARS = 1500
# Answers remembered, by the hash of the text read (about 60 bytes each).
DETECT_CACHE_SIZE = 8192
_DETECTED: ContentCache[tuple[str | None, float]] = ContentCache(
    DETECT_CACHE_SIZE, DETECT_CACHE_SIZE)


class LanguageError(ValueError):
    """A language tag that is not a language tag."""


def normalise(tag: str) -> str:
    """``pt-BR`` -> ``pt``; ``EN`` -> ``en``. Raises ``LanguageError`` naming the value."""
    value = tag.strip()
    if not _TAG.match(value):
        raise LanguageError(f"language={tag[:40]!r} is not a language tag such as 'en' or 'pt-BR'")
    return re.split(r"[-_]", value)[0].lower()


def from_path(path: str | None) -> str | None:
    """The language a path names with a locale segment, if any (``docs/de/refund.md``)."""
    if not path:
        return None
    parts = [p for p in re.split(r"[\\/]", path) if p]
    if not parts:
        return None
    last = parts[-1].rsplit(".", 1)[0] if "." in parts[-1] else parts[-1]
    for part in reversed([*parts[:-1], last]):
        match = _LOCALE.match(part)
        if match and match.group(1).lower() in _known_codes():
            return match.group(1).lower()
    return None


def detect(text: str) -> tuple[str | None, float]:
    """(language, probability) of ``text``, or (None, 0.0) when there is too little text.

    Only the first ``DETECT_CHARS`` characters are read; the answer for a sample
    already classified comes from the cache (same sample, same answer).
    """
    sample = text[:DETECT_CHARS]
    key = content_key(sample)
    found = _DETECTED.get(key)
    if found is not None:
        return found
    if sum(ch.isalpha() for ch in sample) < MIN_DETECT_LETTERS:
        answer: tuple[str | None, float] = (None, 0.0)
    else:
        code, prob = _identifier().classify(sample)
        answer = (str(code), float(prob))
    _DETECTED.put(key, answer)
    return answer


def detect_cache_info() -> CacheInfo:
    """Hits, misses and answers held by ``detect``'s cache (tests, profiles)."""
    return _DETECTED.info()


def detect_cache_clear() -> None:
    _DETECTED.clear()


def load_detector_in_background() -> threading.Thread:
    """Start loading the detector's model in a thread, and return that thread.

    Loading takes ~1.4 s from the package (LZMA decompression, which releases the
    GIL), ~0.01 s mapped from the uncompressed copy (``analysis.langid_model``): a process
    that will detect (a replay, a worker) starts it first and does its other start-up
    work meanwhile. ``detect`` waits for a load under way.
    """
    thread = threading.Thread(target=_identifier, name="language model", daemon=True)
    thread.start()
    return thread


_LOADING = threading.Lock()


@cache
def _loaded() -> Any:
    # loaded on first use: paid only by a process that detects (analysis.langid_model)
    return load_identifier()


def _identifier() -> Any:
    with _LOADING:  # one load, however many threads ask at once
        return _loaded()


@cache
def _known_codes() -> frozenset[str]:
    """Codes a path segment may be read as: the detector's languages (not words like 'go')."""
    return frozenset(SNOWBALL) | frozenset({"zh", "ja", "ko", "vi", "th", "he", "uk", "bg"})
