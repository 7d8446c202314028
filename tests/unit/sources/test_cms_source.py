"""The CMS API source against a small CMS served over real HTTP on loopback."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from support.cms import FakeCms, serve_cms

from sources.cms import CmsApiSource, parse_header
from sources.config import SourceConfig, open_source
from sources.errors import DocumentNotFoundError, SourceDataError, SourceUnavailableError


def record(doc: str, version: int, deleted: bool = False) -> dict[str, object]:
    out: dict[str, object] = {"id": doc, "version": version,
                              "changed_at": "2024-03-01T12:00:00+01:00", "deleted": deleted}
    if not deleted:
        out["content"] = f"# {doc} v{version}"
    return out


@pytest.fixture
def cms() -> Iterator[FakeCms]:
    fake = FakeCms({f"doc/{i:02d}": record(f"doc/{i:02d}", i + 1) for i in range(7)})
    fake.documents["gone"] = record("gone", 4, deleted=True)
    with serve_cms(fake) as served:
        yield served


def source_for(cms: FakeCms, **kwargs: object) -> CmsApiSource:
    return CmsApiSource(cms.url, headers={"Authorization": "Bearer s3cret"}, page_size=3,
                        backoff_seconds=0.01, **kwargs)  # type: ignore[arg-type]


def test_listing_follows_every_page_and_sends_the_auth_header(cms: FakeCms) -> None:
    entries = list(source_for(cms).list_documents())
    assert len(entries) == 8
    assert len([p for p, _ in cms.requests if p.startswith("/documents?")]) == 3
    assert all(h.get("Authorization") == "Bearer s3cret" for _, h in cms.requests)
    by_id = {e.document_id: e for e in entries}
    assert by_id["doc/03"].version == 4
    assert by_id["doc/03"].changed_at == datetime(2024, 3, 1, 11, tzinfo=UTC)
    assert by_id["gone"].deleted


def test_get_document_escapes_the_id_and_maps_404(cms: FakeCms) -> None:
    source = source_for(cms)
    doc = source.get_document("doc/02")
    assert (doc.version, doc.content) == (3, "# doc/02 v3")
    assert "/documents/doc%2F02" in [p for p, _ in cms.requests]
    for missing in ("gone", "never"):
        with pytest.raises(DocumentNotFoundError, match=missing):
            source.get_document(missing)


def test_server_errors_are_retried_then_unavailable(cms: FakeCms) -> None:
    cms.fail_with = 503
    with pytest.raises(SourceUnavailableError, match=r"503 \(after 3 attempts\)"):
        list(source_for(cms).list_documents())
    assert len(cms.requests) == 3


def test_a_refused_auth_is_a_data_error_with_the_status(cms: FakeCms) -> None:
    cms.fail_with = 401
    with pytest.raises(SourceDataError, match="answered 401"):
        list(source_for(cms).list_documents())
    assert len(cms.requests) == 1  # not retried


@pytest.mark.parametrize(
    "body",
    [b"<html>oops</html>",
     json.dumps({"documents": [{"id": "a", "version": "3",
                                "changed_at": "2024-01-01T00:00:00Z"}]}).encode(),
     json.dumps({"documents": [{"id": "a", "version": 3,
                                "changed_at": "2024-01-01T00:00:00"}]}).encode(),
     json.dumps({"items": []}).encode()],
    ids=["html", "version-string", "naive-time", "wrong-shape"],
)
def test_a_malformed_listing_is_a_data_error(cms: FakeCms, body: bytes) -> None:
    cms.raw_listing = body
    with pytest.raises(SourceDataError, match="not a valid answer"):
        list(source_for(cms).list_documents())


def test_a_cursor_that_loops_is_refused(cms: FakeCms) -> None:
    cms.raw_listing = json.dumps({"documents": [], "next_cursor": "same"}).encode()
    with pytest.raises(SourceDataError, match="repeats"):
        list(source_for(cms).list_documents())


def test_an_unreachable_cms_is_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    source = CmsApiSource(f"http://127.0.0.1:{port}", attempts=2, backoff_seconds=0.01)
    with pytest.raises(SourceUnavailableError, match="cannot reach"):
        list(source.list_documents())


def test_config_checks_what_each_kind_needs() -> None:
    with pytest.raises(ValueError, match="needs source_url"):
        SourceConfig(kind="cms")
    with pytest.raises(ValueError, match="needs source_path"):
        SourceConfig(kind="changelog")
    with pytest.raises(ValueError, match="'Name: value'"):
        SourceConfig(kind="cms", url="http://x", auth_header="no-colon")
    assert parse_header("X-Api-Key:  k ") == {"X-Api-Key": "k"}
    assert open_source(SourceConfig(kind="folder", path="/tmp")).name == "folder"
