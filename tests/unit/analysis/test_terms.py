"""Analysis: the same words meet across inflections, languages keep their own rules."""

from __future__ import annotations

import pytest

from analysis.languages import LanguageError, detect, from_path, normalise
from analysis.terms import analyse, query_terms


def test_english_inflections_share_a_term_and_filler_is_dropped() -> None:
    assert analyse("Refunds refunded", "en") == ["refund", "refund"]
    assert analyse("Is it the refund?", "en") == ["refund"]


def test_an_agglutinative_language_is_stemmed_in_its_own_rules() -> None:
    assert len(set(analyse("limit limiti limitinin", "tr"))) == 1


def test_diacritics_fold_after_stemming_but_not_in_turkish() -> None:
    assert analyse("remboursé", "fr") == analyse("rembourse", "fr")
    assert analyse("Rückerstattung", "de") == analyse("ruckerstattung", "de")
    dotless = "\u0131s\u0131k"  # Turkish for "light", with dotless i
    assert analyse(dotless, "tr") != analyse("isik", "tr")


@pytest.mark.parametrize(
    ("language", "elided", "bare"),
    [
        ("fr", "l'abonnement d\u2019un enfant qu'il", "abonnement un enfant il"),
        ("it", "dell'account nell'app", "account app"),
        ("ca", "l'abonament d'un fill", "abonament un fill"),
    ],
)
def test_an_elided_article_is_not_a_term_of_its_own(
    language: str, elided: str, bare: str
) -> None:
    assert analyse(elided, language) == analyse(bare, language)


def test_elision_is_only_at_a_word_start_and_only_where_the_language_has_it() -> None:
    assert analyse("aujourd'hui", "fr") == analyse("aujourd hui", "fr")  # not a prefix
    assert "l" in analyse("l'abonnement", None)  # no language, no rule


@pytest.mark.parametrize(
    ("language", "text", "kept", "dropped"),
    [
        ("fr", "la période d'essai et le bon d'achat", {"essai", "bon"}, {"la", "et", "le"}),
        ("sv", "ångerrätt i fjorton dagar, beslut", {"fjorton", "dag", "beslut"}, {"i"}),
        ("es", "el tiempo y el valor del trabajo", {"tiemp", "valor", "trabaj"}, {"el", "y"}),
        ("it", "comprare il lavoro", {"compr", "lavor"}, {"il"}),
    ],
)
def test_stop_words_are_function_words_not_what_policies_are_about(
    language: str, text: str, kept: set[str], dropped: set[str]
) -> None:
    terms = set(analyse(text, language))
    assert kept <= terms
    assert not dropped & terms


def test_tokens_with_digits_are_kept_whole() -> None:
    assert analyse("MT103 v8 2703(f)", "en") == ["mt103", "v8", "2703", "f"]


def test_an_unknown_language_is_lowercased_and_not_stemmed() -> None:
    assert analyse("Refunds Policies", None) == ["refunds", "policies"]
    assert analyse("Refunds Policies", "xx") == ["refunds", "policies"]


def test_a_query_in_two_languages_has_the_terms_of_both() -> None:
    terms = query_terms("Rückerstattungen refunds", ["de", "en"])
    assert "refund" in terms and "ruckerstatt" in terms


def test_languages_from_paths_tags_and_text() -> None:
    assert from_path("legal/de/terms.md") == "de"
    assert from_path("docs/privacy_policy/pt-BR.md") == "pt"
    assert from_path("go/index.md") is None  # not a locale the detector knows
    assert normalise("pt-BR") == "pt"
    with pytest.raises(LanguageError, match="language="):
        normalise("not a tag")
    german = "Wie lange kann ich mein Geld zurückbekommen, wenn die Fahrt ausfällt?"
    assert detect(german)[0] == "de"
    assert detect("ok") == (None, 0.0)
