"""``policy-indexer status``: how fresh the index is, in either mode, as one report.

Reads the mode's index (the embedded SQLite file, or Elasticsearch), the
configured source if any, the dead letters and the last reconcile. Without a
source, versions in the source and lag are unknown (``None``) and said so.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import structlog

from policy_indexer.runtime.backends import Backends, IndexNotCreated, open_backends
from policy_indexer.runtime.dead_letters import DeadLetterError, refusals
from policy_indexer.runtime.sources import SourceNotConfiguredError, open_configured_source
from policy_indexer.settings import Settings
from policy_indexer.status_report import StatusReport, document_statuses
from sources.base import SourceEntry
from sources.errors import SourceError

log = structlog.get_logger(__name__)


def _refused(backends: Backends) -> dict[tuple[str, int], str] | None:
    """The refused versions (``dead_letters.refusals``); None when the dead-letter topic
    cannot be read (said on stderr's log; those documents then show as missing)."""
    try:
        return refusals(backends.list_dead_letters())
    except DeadLetterError as exc:
        log.warning("dead-letter topic unreadable: refused documents show as missing",
                    error=str(exc)[:200])
        return None


class StatusUnavailable(Exception):
    """The report cannot be made (no index yet, the source cannot be listed); says why."""


def _listing(settings: Settings) -> tuple[str | None, list[SourceEntry] | None]:
    try:
        source = open_configured_source(settings)
    except SourceNotConfiguredError:
        return None, None
    except ValueError as exc:
        raise StatusUnavailable(f"source configuration: {exc}") from exc
    try:
        return source.name, list(source.list_documents())
    except SourceError as exc:
        raise StatusUnavailable(f"cannot list the source {source.name!r}: {exc}") from exc
    finally:
        source.close()


def build_report(settings: Settings) -> StatusReport:
    """Raises ``StatusUnavailable``; ``StoreError``/``QueueError``: the index is unreadable."""
    source_name, listing = _listing(settings)
    now = datetime.now(UTC)
    grace = timedelta(seconds=settings.sweep_grace_seconds)
    try:
        backends = open_backends(settings, existing=True)
    except IndexNotCreated as exc:
        raise StatusUnavailable(str(exc)) from exc
    try:
        store = backends.store
        store.refresh()
        refused = _refused(backends)
        docs, leftovers = document_statuses(
            listing, store.iter_states(), store.iter_chunks(), now=now, grace=grace,
            source_name=source_name, refused=refused,
        )
        report = StatusReport(backends.mode, backends.where(), source_name, now, docs,
                              leftovers)
        report.last_reindex = backends.last_reconcile()
        report.dead_letters = backends.dead_letters()
        report.queued = backends.queued()
    finally:
        backends.close()
    return report
