"""Settings are composed of one section per component; defaults are written once.

Each section is a plain pydantic model in its own module; ``Settings`` has every
section's fields and nothing else, and a section's builder, at the defaults,
makes the component's own default config (the settings take the component's
constants, so the two cannot drift apart).
"""

from __future__ import annotations

import inspect

import pytest
from pydantic import BaseModel

import policy_indexer.settings as settings_package
from consumers.commit_policy import CommitPolicy
from consumers.retry import RetryPolicy
from embeddings.backfill import VectorBackfill
from foundation.http.limits import HttpLimits
from policy_indexer.settings import Settings
from reindex.jobs import JobRunner
from reindex.reconcile import ReconcileOptions, Reconciler
from transport.local_clients import LocalQueueConsumer
from watcher.watch import FolderWatcher, WatcherThread, start_watcher_thread

SECTIONS = [base for base in Settings.__mro__[1:] if issubclass(base, BaseModel)
            and base.__module__.startswith("policy_indexer.settings.")]


def _default(function: object, name: str) -> object:
    return inspect.signature(function).parameters[name].default  # type: ignore[arg-type]


def test_settings_is_exactly_its_sections() -> None:
    assert len(SECTIONS) == 14
    fields = [name for section in SECTIONS for name in section.model_fields]
    assert len(fields) == len(set(fields)), "a field in two sections"
    assert set(fields) == set(Settings.model_fields)
    assert {s.__module__.rsplit(".", 1)[1] for s in SECTIONS} == {
        "process", "servers", "kafka", "elasticsearch", "worker", "webhook", "adapters",
        "sources", "monitor", "reindex", "watcher", "embedded", "search", "embeddings"}


def test_the_dense_views_are_in_the_search_section() -> None:
    from policy_indexer.settings.search import SearchSettings

    assert {"encoders", "search_encoder"} <= set(SearchSettings.model_fields)


def test_a_section_reads_its_environment_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICY_INDEXER_WATCH_DEBOUNCE_MS", "250")
    monkeypatch.setenv("POLICY_INDEXER_COMMIT_EVERY_RECORDS", "7")
    monkeypatch.setenv("POLICY_INDEXER_HTTP_MAX_CONNECTIONS", "9")
    settings = Settings()
    assert settings.watch_debounce_ms == 250
    assert settings.commit_policy().max_records == 7
    assert settings.http_limits().max_connections == 9


def test_a_sections_rule_still_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLICY_INDEXER_WATCH_RESTART_INITIAL_SECONDS", "10")
    monkeypatch.setenv("POLICY_INDEXER_WATCH_RESTART_MAX_SECONDS", "5")
    with pytest.raises(ValueError, match="below watch_restart_initial_seconds"):
        Settings()


def test_the_builders_at_the_defaults_are_the_components_defaults() -> None:
    settings = Settings()
    assert settings.retry_policy() == RetryPolicy()
    assert settings.http_limits() == HttpLimits()
    commit, default_commit = settings.commit_policy(), CommitPolicy()
    assert (commit.max_records, commit.max_interval_s) == (
        default_commit.max_records, default_commit.max_interval_s)


def test_the_components_defaults_are_the_settings_defaults() -> None:
    settings = Settings()
    assert ReconcileOptions().max_delete_fraction == settings.reindex_max_delete_fraction
    assert _default(Reconciler, "batch_size") == settings.reindex_batch_size
    fields = JobRunner.__dataclass_fields__
    assert fields["max_delete_fraction"].default == settings.reindex_max_delete_fraction
    assert fields["batch_size"].default == settings.reindex_batch_size
    watcher = FolderWatcher.__dataclass_fields__
    assert watcher["debounce_ms"].default == settings.watch_debounce_ms
    assert watcher["rescan_seconds"].default == settings.watch_rescan_seconds
    for function in (WatcherThread, start_watcher_thread):
        assert _default(function, "restart_initial_s") == settings.watch_restart_initial_seconds
        assert _default(function, "restart_max_s") == settings.watch_restart_max_seconds
    assert _default(start_watcher_thread, "debounce_ms") == settings.watch_debounce_ms
    assert _default(LocalQueueConsumer, "lease_ttl_s") == settings.embedded_lease_seconds
    assert _default(VectorBackfill, "batch_size") == settings.embed_batch_size


def test_the_package_exports_what_callers_import() -> None:
    for name in ("Settings", "PREFIX", "MAX_SECRET_FILE_BYTES", "mask_url", "unknown_settings"):
        assert hasattr(settings_package, name), name
