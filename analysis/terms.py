"""Text -> terms: tokenise, lowercase, stop words, Snowball stem, fold diacritics.

The minimal Elasticsearch has no language analyzers, and SQLite's FTS5 has only
an English Porter stemmer, so analysis happens here, in Python, and every store
indexes the same space-separated terms (Elasticsearch with a ``whitespace``
analyzer, FTS5 with ``unicode61``). A query is analysed the same way, so a term
matches when the words share a stem in their language: ``limit, limiti,
limitinin`` are one term in Turkish.

Order matters: Snowball stemmers expect the accented spelling (French
``remboursé``), so diacritics are folded *after* stemming, and not at all in
languages where they tell words apart (Turkish dotless and dotted i). Tokens with a
digit (``MT103``, ``v8``, ``2703``) are kept whole, never stemmed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import cache

import Stemmer
from stopwords import LANGUAGE_MAPPING, get_stopwords

from analysis.languages import SNOWBALL

_WORD = re.compile(r"\w+", re.UNICODE)
# Languages where a diacritic makes another word (fold nowhere else).
_NO_FOLD = frozenset({"tr", "az"})
# Elided articles and pronouns: French "l'abonnement" is "abonnement", not the terms
# "l" and "abonnement" (Lucene's French, Italian and Catalan analyzers strip them too).
_ELIDED = {
    "fr": "l|m|t|qu|n|s|j|d|c|jusqu|quoiqu|lorsqu|puisqu",
    "it": "c|l|all|dall|dell|nell|sull|coll|pell|gl|agl|dagl|degl|negl|sugl|un|m|t|s|v|d",
    "ca": "d|l|m|n|s|t",
}
_ELISION = {
    lang: re.compile(rf"\b(?:{words})['\u2019](?=\w)") for lang, words in _ELIDED.items()
}
MAX_TERM_CHARS = 64  # a longer run is a hash, a URL or garbage: not a searchable word
# Distinct tokens remembered a language (a few MB): a library's vocabulary is far smaller.
MAX_MEMO_TOKENS = 200_000


def analyse(text: str, language: str | None) -> list[str]:
    """The terms of ``text`` in document order (repeats kept: BM25 counts them)."""
    lang = language if language in SNOWBALL else None
    lowered = _lower(text, lang)
    elision = _ELISION.get(lang or "")
    if elision is not None:
        lowered = elision.sub("", lowered)
    known = _term_memo(lang)
    if len(known) > MAX_MEMO_TOKENS:
        known.clear()
    terms: list[str] = []
    for token in _WORD.findall(lowered):
        if token in known:
            term = known[token]
        else:
            term = known[token] = _term(token, lang)
        if term is not None:
            terms.append(term)
    return terms


def _term(token: str, lang: str | None) -> str | None:
    """The term of one lowercased token in ``lang``; None when it is no term."""
    if token in stop_words(lang) or len(token) > MAX_TERM_CHARS or not token.strip("_"):
        return None
    stem = _stemmer(lang)
    term = token if stem is None or _has_digit(token) else stem(token)
    return fold_diacritics(term) if lang not in _NO_FOLD else term


@cache
def _term_memo(language: str | None) -> dict[str, str | None]:
    """Token -> term (None: no term) of a language: a text's words repeat, so each
    distinct token is stopped, stemmed and folded once (cleared past ``MAX_MEMO_TOKENS``)."""
    return {}


def query_terms(text: str, languages: Iterable[str | None]) -> list[str]:
    """Distinct terms of a query analysed in each of ``languages`` (first seen first).

    Analysing a question in both its detected language and English lets a
    question that mixes them (or one the detector is unsure of) still meet the
    documents' terms.
    """
    seen: dict[str, None] = {}
    for language in dict.fromkeys(languages):
        for term in analyse(text, language):
            seen.setdefault(term, None)
    return list(seen)


def fold_diacritics(term: str) -> str:
    if term.isascii():
        return term
    decomposed = unicodedata.normalize("NFKD", term)
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", folded).replace("ß", "ss")


def _lower(text: str, language: str | None) -> str:
    if language in _NO_FOLD:  # Turkish: capital I is dotless, capital dotted I is i
        text = text.replace("I", "\u0131").replace("\u0130", "i")
    return text.lower()


def _has_digit(token: str) -> bool:
    return any(ch.isdigit() for ch in token)


# Snowball's stop lists (function words only), as ``bm25s`` ships them, for the languages
# where the ``stopwords`` package's list holds content words that policies are about:
# French "essai" (trial), "bon" (voucher), "début"; Swedish "dagar" (days), "fjorton"
# (fourteen), "beslut" (decision), "kr"; Spanish "trabajo", "tiempo", "valor"; Italian
# "comprare", "lavoro"; Portuguese "valor", "horas"; Norwegian "tilstand", "slutt"; Danish
# "mand", "ny"; Russian and Turkish numerals. Its German, Dutch and English lists are
# function words, so they stay (and Snowball's German list measured worse: docs/search.md).
_SNOWBALL_LISTS = {
    "da": "DANISH", "es": "SPANISH", "fr": "FRENCH", "it": "ITALIAN", "nb": "NORWEGIAN",
    "no": "NORWEGIAN", "pt": "PORTUGUESE", "ru": "RUSSIAN", "sv": "SWEDISH", "tr": "TURKISH",
}


@cache
def stop_words(language: str | None) -> frozenset[str]:
    """The language's stop words: short lists of function words.

    Snowball's (through ``bm25s``) where the ``stopwords`` package's list holds content
    words, else that package's (English: its 149 words). Short lists on purpose: BM25
    already weighs common words down, so a list only has to keep question filler
    ("is it ... to the") out of the query; a longer one (1,300 words) drops "order",
    "free", "year", which policies are about.
    """
    if language in _SNOWBALL_LISTS:
        from bm25s import stopwords as snowball  # noqa: PLC0415 (numpy and more: only when needed)

        words: Iterable[str] = getattr(snowball, f"STOPWORDS_{_SNOWBALL_LISTS[language]}")
    elif language is not None and language in LANGUAGE_MAPPING:
        words = get_stopwords(language, cache=True)
    else:
        return frozenset()
    return frozenset(
        token
        for word in words
        for token in _WORD.findall(word.lower())
        if not _has_digit(token)
    )


@cache
def _stemmer(language: str | None) -> Callable[[str], str] | None:
    if language is None:
        return None
    stemmer = Stemmer.Stemmer(SNOWBALL[language], 10000)
    stem: Callable[[str], str] = stemmer.stemWord
    return stem
