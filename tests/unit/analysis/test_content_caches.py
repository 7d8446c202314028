"""The text-keyed caches of analysis: bounded, and never a different answer.

Language detection and term analysis are remembered by a hash of their input; a
replay of a document's history then analyses each repeated section once. What a
user needs from that: the same terms and languages as without the cache, and a
memory bound that holds whatever the library throws at it.
"""

from __future__ import annotations

import threading

import pytest

from analysis import languages, terms
from analysis.cache import ContentCache, content_key
from chunker.document import chunk_document
from chunker.model import Chunk
from store.search_terms import chunk_terms, terms_cache_clear, terms_cache_info


def test_the_cache_drops_the_least_recent_entry_past_its_entry_bound() -> None:
    cache: ContentCache[str] = ContentCache(2, 100)
    cache.put(b"a", "1")
    cache.put(b"b", "2")
    assert cache.get(b"a") == "1"  # a is now the most recent
    cache.put(b"c", "3")
    assert cache.get(b"b") is None
    assert (cache.get(b"a"), cache.get(b"c")) == ("1", "3")
    info = cache.info()
    assert (info.entries, info.hits, info.misses) == (2, 3, 1)


def test_the_cache_holds_its_weight_bound_and_refuses_a_value_heavier_than_it() -> None:
    cache: ContentCache[str] = ContentCache(100, 10, len)
    cache.put(b"a", "x" * 6)
    cache.put(b"b", "y" * 6)  # 12 > 10: a goes
    assert cache.get(b"a") is None and cache.get(b"b") == "y" * 6
    cache.put(b"huge", "z" * 11)
    assert cache.get(b"huge") is None and cache.get(b"b") == "y" * 6
    assert cache.info().weight == 6
    cache.put(b"b", "w")  # replacing a value counts its new weight only
    assert cache.info().weight == 1


def test_a_cache_with_no_room_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one entry"):
        ContentCache(0, 10)


def test_keys_keep_parts_apart_and_take_lone_surrogates() -> None:
    assert content_key("ab", "c") != content_key("a", "bc")
    assert content_key("en", "text") != content_key("", "entext")
    assert len(content_key("\ud800 a lone surrogate")) == 16


def test_concurrent_puts_keep_the_bounds() -> None:
    cache: ContentCache[str] = ContentCache(50, 10_000, len)

    def fill(n: int) -> None:
        for i in range(2_000):
            cache.put(content_key(str(n), str(i)), "v" * (i % 7))

    threads = [threading.Thread(target=fill, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    info = cache.info()
    assert info.entries <= 50 and info.weight <= 10_000


def test_detect_answers_a_repeated_sample_from_the_cache_with_the_same_answer() -> None:
    languages.detect_cache_clear()
    text = "Die Rückerstattung erfolgt innerhalb von vierzehn Tagen nach Eingang der Ware."
    first = languages.detect(text)
    before = languages.detect_cache_info()
    assert first[0] == "de"
    assert languages.detect(text) == first
    after = languages.detect_cache_info()
    assert after.hits >= before.hits + 1
    assert languages.detect("ok") == (None, 0.0)  # too little text, cached or not
    assert languages.detect("ok") == (None, 0.0)


def _uncached(text: str, language: str | None) -> list[str]:
    """``analyse`` as it was before the memo: every token stopped, stemmed, folded."""
    lang = language if language in languages.SNOWBALL else None
    lowered = terms._lower(text, lang)
    elision = terms._ELISION.get(lang or "")
    if elision is not None:
        lowered = elision.sub("", lowered)
    stop, stem = terms.stop_words(lang), terms._stemmer(lang)
    out: list[str] = []
    for token in terms._WORD.findall(lowered):
        if token in stop or len(token) > terms.MAX_TERM_CHARS or not token.strip("_"):
            continue
        term = token if stem is None or terms._has_digit(token) else stem(token)
        out.append(terms.fold_diacritics(term) if lang not in terms._NO_FOLD else term)
    return out


@pytest.mark.parametrize(("text", "language"), [
    ("Refunds are refunded within fourteen days; the refund's amount is 12.50 EUR.", "en"),
    ("Le remboursement d'un abonnement est effectué sous quatorze jours.", "fr"),
    ("Rückerstattungen erfolgen innerhalb von vierzehn Tagen. Rückerstattungen!", "de"),
    ("Iade s\u00fcresi on d\u00f6rt g\u00fcnd\u00fcr; \u0131\u015f\u0131k ve "
     "\u0130stanbul. I\u015eIK", "tr"),
    ("No language declared: refunds refunded " + "x" * 80 + " ___ tail", None),
])
def test_the_token_memo_gives_the_terms_of_a_fresh_analysis(
    text: str, language: str | None
) -> None:
    expected = _uncached(text, language)
    assert expected  # the oracle found terms: the comparison means something
    assert terms.analyse(text, language) == expected
    assert terms.analyse(text, language) == expected  # the second time from the memo


def test_the_token_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terms, "MAX_MEMO_TOKENS", 10)
    terms.analyse(" ".join(f"word{i}x" for i in range(50)), "en")
    terms.analyse("one more", "en")
    assert len(terms._term_memo("en")) <= 10 + 2


def test_chunk_terms_of_an_unchanged_chunk_come_from_the_cache() -> None:
    terms_cache_clear()
    window = "Refunds are paid within 30 days of the return reaching the warehouse. " * 20
    damaged = "Photos of the damaged item help the team decide on a replacement. " * 20
    markdown = f"# Refunds\n\n## Window\n\n{window}\n\n## Damaged\n\n{damaged}\n"
    first: list[Chunk] = chunk_document("refunds", 1, markdown)
    second: list[Chunk] = chunk_document("refunds", 2, markdown.replace("Photos", "Pictures"))
    assert len(first) == len(second) >= 2
    one = [chunk_terms(c) for c in first]
    misses = terms_cache_info().misses
    two = [chunk_terms(c) for c in second]
    info = terms_cache_info()
    assert info.misses - misses == 1, info  # only the changed section was analysed again
    assert one[:-1] == two[:-1]
    assert two[-1] != one[-1] and "pictur" in two[-1].split()
    assert two[-1].split() == _uncached("\n".join(
        [second[-1].metadata.title or "", *second[-1].heading_path, second[-1].text,
         " ".join(second[-1].metadata.keywords)]), second[-1].metadata.language)
