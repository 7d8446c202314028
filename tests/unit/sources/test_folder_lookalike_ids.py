"""In the folder, a file whose path makes a look-alike id is unreadable.

``refunds\\u200b.md`` beside ``refunds.md`` would be a second document that prints as the
first; ``refunds .md`` (a space before the suffix), ``refunds\\u202e.md``, a name written
decomposed (macOS writes NFD) likewise. Each is listed ``unreadable`` (``document_id``)
with the reason, ``get_document`` refuses it, and the watcher publishes nothing for it,
while the other files are listed and published as before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.webhook_helpers import MemoryPublisher

from sources.base import UnreadableKind
from sources.folder import MarkdownFolderSource, UnreadableFileError
from watcher.folder_sync import FolderSync
from watcher.watch_state import WatchState

BAD_NAMES = [
    ("zero-width space", "refunds\u200b.md", "refunds\u200b", "U+200B"),
    ("right-to-left override", "refunds\u202e.md", "refunds\u202e", "U+202E"),
    ("byte order mark", "\ufeffrefunds.md", "\ufeffrefunds", "U+FEFF"),
    ("C1 next line", "refunds\u0085.md", "refunds\u0085", "U+0085"),
    ("trailing space", "refunds .md", "refunds ", "whitespace"),
    ("leading space in a folder", " cities/index.md", " cities", "whitespace"),
    ("decomposed (NFD) name", "cafe\u0301.md", "cafe\u0301", "NFC"),
]


def library(root: Path, bad: str) -> Path:
    root.mkdir()
    (root / "refunds.md").write_text("---\nversion: 3\n---\n## Refunds\nWithin 30 days.\n")
    path = root / bad
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\nversion: 9\n---\n## Refunds\nWithin 300 days.\n")
    return root


@pytest.mark.parametrize(("case", "name", "document_id", "words"), BAD_NAMES,
                         ids=[b[0] for b in BAD_NAMES])
def test_a_file_making_a_lookalike_id_is_listed_unreadable_and_never_published(
    tmp_path: Path, case: str, name: str, document_id: str, words: str
) -> None:
    root = library(tmp_path / "lib", name)
    source = MarkdownFolderSource(root)
    entries = {e.document_id: e for e in source.list_documents()}
    assert set(entries) == {"refunds", document_id}, case
    assert entries["refunds"].unreadable is None and entries["refunds"].version == 3
    reason = entries[document_id].unreadable
    assert reason is not None, case
    assert reason.kind is UnreadableKind.DOCUMENT_ID
    assert words in reason.detail, reason.detail
    with pytest.raises(UnreadableFileError, match="document id"):
        source.get_document(document_id)

    publisher = MemoryPublisher()
    report = FolderSync(root, publisher, WatchState(tmp_path / "watch.db")).sync()
    assert [(e.document_id, e.version) for e in publisher.events] == [("refunds", 3)]
    assert report.upserts == 1
