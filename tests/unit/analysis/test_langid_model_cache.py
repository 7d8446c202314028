"""The detector's model from its uncompressed copy: the same answers, and never a failure.

The copy saves ~1 s of every process that detects a language; what matters to a
user is that it can never change a detected language, and that a bad cache
(unwritable, truncated, foreign) costs only that second.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import langid_model

TEXTS = [
    "Refunds are paid within fourteen days of the return reaching our warehouse.",
    "Die Rückerstattung erfolgt innerhalb von vierzehn Tagen nach Eingang der Ware.",
    "Le remboursement est effectué sous quatorze jours après réception du colis.",
    "El reembolso se realiza en un plazo de catorce días tras recibir el paquete.",
    "Il rimborso avviene entro quattordici giorni dalla ricezione del pacco.",
    "Возврат средств производится в течение четырнадцати дней после получения.",
]


@pytest.fixture(scope="module")
def packaged() -> list[tuple[str, float]]:
    langid_model.use_cache_dir(None)
    identifier = langid_model.load_identifier()
    return [identifier.classify(t) for t in TEXTS]


def _answers(cache: Path | None) -> list[tuple[str, float]]:
    langid_model.use_cache_dir(cache)
    try:
        identifier = langid_model.load_identifier()
    finally:
        langid_model.use_cache_dir(None)
    return [identifier.classify(t) for t in TEXTS]


def test_the_copy_is_written_once_and_answers_as_the_packaged_model(
    tmp_path: Path, packaged: list[tuple[str, float]], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert [code for code, _ in packaged] == ["en", "de", "fr", "es", "it", "ru"]
    assert _answers(tmp_path) == packaged  # writes the copy
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].name.startswith("py3langid-") and files[0].stat().st_size
    import py3langid.modelio

    def no_inflating(_path: object) -> None:
        raise AssertionError("the packaged model was inflated although the copy exists")

    monkeypatch.setattr(py3langid.modelio, "load_model", no_inflating)
    assert _answers(tmp_path) == packaged  # read from the copy alone


def test_an_unwritable_cache_place_loads_the_packaged_model(
    tmp_path: Path, packaged: list[tuple[str, float]]
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory would be")
    assert _answers(blocker / "cache") == packaged
    assert blocker.read_text().startswith("a file")


@pytest.mark.parametrize("damage", ["truncated", "foreign"])
def test_a_damaged_copy_falls_back_to_the_packaged_model(
    tmp_path: Path, packaged: list[tuple[str, float]], damage: str
) -> None:
    assert _answers(tmp_path) == packaged
    (copy,) = tmp_path.iterdir()
    size = copy.stat().st_size
    if damage == "truncated":
        copy.write_bytes(copy.read_bytes()[: size // 3])
    else:
        copy.write_bytes(b"PK\x03\x04 not the model at all")
    assert _answers(tmp_path) == packaged
    assert [p.name for p in tmp_path.iterdir()] == [copy.name]  # written again, no temp left
    assert copy.stat().st_size == size
    assert _answers(tmp_path) == packaged


def test_the_copy_is_mapped_not_read(tmp_path: Path) -> None:
    """Its pages come from the page cache that every process shares, on first touch."""
    import numpy as np

    _answers(tmp_path)
    langid_model.use_cache_dir(tmp_path)
    try:
        identifier = langid_model.load_identifier()
    finally:
        langid_model.use_cache_dir(None)
    assert isinstance(identifier.nb_ptc, np.memmap)
    assert isinstance(identifier.tk_nextmove, memoryview)


def test_writing_the_copy_removes_this_versions_older_copies_only(
    tmp_path: Path, packaged: list[tuple[str, float]]
) -> None:
    """A reinstall changes the packaged file's mtime, so the copy's name: the old copies
    (and the former ``.npz`` format), 68 MB each, would pile up, never read again."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE

    this_install = langid_model.cache_file(tmp_path, MODEL_DIR / MODEL_FILE).name
    same_version = this_install.rsplit("-", 1)[0]  # py3langid-<version>-<size>
    older = tmp_path / f"{same_version}-1.npy"
    old_format = tmp_path / f"{same_version}-2.npz"
    other_version = tmp_path / "py3langid-0.0.1-4586720-3.npy"
    for path in (older, old_format, other_version):
        path.write_bytes(b"an old copy")
    assert _answers(tmp_path) == packaged
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted([this_install, other_version.name]), names
    assert not older.exists() and not old_format.exists()


def test_logs_set_up_late_are_set_up_once_before_the_first_line(
    tmp_path: Path, packaged: list[tuple[str, float]]
) -> None:
    """``policy-indexer chunk`` sets up its logs only if the model cache logs."""
    from structlog.testing import capture_logs

    calls: list[int] = []
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory would be")
    langid_model.use_cache_dir(blocker / "cache", before_first_log=lambda: calls.append(1))
    try:
        with capture_logs() as logs:
            assert calls == []
            identifier = langid_model.load_identifier()
    finally:
        langid_model.use_cache_dir(None)
    assert [identifier.classify(t) for t in TEXTS] == packaged
    assert calls == [1]  # once, however many lines
    assert [line["event"] for line in logs] == ["language model cache not written"]
