"""``policy-indexer status [--json]``: how fresh the index is, in either mode.

Reads the index of the configured mode (the embedded SQLite file, or
Elasticsearch), the configured source if any (``POLICY_INDEXER_SOURCE_KIND``),
and the dead letters (the local queue's table, or the dead-letter topic). Exits
1 when the index cannot be read. Without a source, versions in the source and
lag are unknown (``null``) and said so.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

import click
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from policy_indexer.commands.reindex import SCHEDULER_FILE
from policy_indexer.commands.run import open_store
from policy_indexer.embedded import Embedded, index_path
from policy_indexer.settings import Settings
from policy_indexer.sources import SourceNotConfiguredError, open_configured_source
from policy_indexer.status_report import StatusReport, document_statuses
from reindex.backends_es import ElasticsearchRunLog
from reindex.backends_sqlite import SchedulerDatabase
from sources.base import SourceEntry
from sources.errors import SourceError
from store.base import Store
from store.elasticsearch import ElasticsearchStore
from store.errors import StoreError
from transport.local_queue import QueueError

TABLE_ROWS = 40


def _kafka_dead_letters(settings: Settings) -> int | None:
    """Records in the dead-letter topic (None when Kafka cannot say in time)."""
    try:
        consumer = KafkaConsumer(bootstrap_servers=settings.kafka_bootstrap_servers.split(","),
                                 request_timeout_ms=5000)
    except KafkaError:
        return None
    try:
        topic = settings.kafka_dead_letter_topic
        parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        ends, starts = consumer.end_offsets(parts), consumer.beginning_offsets(parts)
        return int(sum(ends[tp] - starts[tp] for tp in parts))
    except KafkaError:
        return None
    finally:
        consumer.close()


def _last_reindex(settings: Settings, store: Store) -> datetime | None:
    """When the last successful (non-dry) reconcile ended, from the reindex run log."""
    try:
        if isinstance(store, ElasticsearchStore):
            record = ElasticsearchRunLog(store.client, settings.index_prefix).last_success(
                "reconcile"
            )
        else:
            path = settings.embedded_dir / SCHEDULER_FILE
            if not path.exists():
                return None
            database = SchedulerDatabase(path)
            try:
                database.ensure_ready()
                record = database.last_success("reconcile")
            finally:
                database.close()
    except (StoreError, sqlite3.Error):
        return None  # no run log yet: never reindexed
    return record.ended_at if record is not None else None


def _listing(settings: Settings) -> tuple[str | None, list[SourceEntry] | None]:
    try:
        source = open_configured_source(settings)
    except SourceNotConfiguredError:
        return None, None
    except ValueError as exc:
        raise click.ClickException(f"source configuration: {exc}") from exc
    try:
        return source.name, list(source.list_documents())
    except SourceError as exc:
        raise click.ClickException(f"cannot list the source {source.name!r}: {exc}") from exc
    finally:
        source.close()


def build_report(settings: Settings) -> StatusReport:
    source_name, listing = _listing(settings)
    now = datetime.now(UTC)
    grace = timedelta(seconds=settings.sweep_grace_seconds)
    store: Store
    embedded: Embedded | None = None
    if settings.pipeline == "embedded":
        if not index_path(settings).exists():
            raise click.ClickException(
                f"no embedded index at {index_path(settings)} yet: `policy-indexer run` or "
                "`policy-indexer replay FILE` creates it (or set POLICY_INDEXER_EMBEDDED_DIR)"
            )
        embedded = Embedded.open(settings)
        store, where = embedded.store, str(index_path(settings))
    else:
        es = open_store(settings)
        store, where = es, f"{settings.elasticsearch_url} {es.names.chunks}"
    try:
        store.refresh()
        docs, leftovers = document_statuses(
            listing, store.iter_states(), store.iter_chunks(), now=now, grace=grace
        )
        report = StatusReport(settings.pipeline, where, source_name, now, docs, leftovers)
        report.last_reindex = _last_reindex(settings, store)
        if embedded is not None:
            report.dead_letters = len(embedded.queue.dead_letters(embedded.topic))
            report.queued = embedded.queue.pending(embedded.topic)
        else:
            report.dead_letters = _kafka_dead_letters(settings)
    finally:
        if embedded is not None:
            embedded.close()
        else:
            store.close()
    return report


def _fmt_lag(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds:.0f}s" if seconds < 3600 else f"{seconds / 3600:.1f}h"


def _print_table(report: StatusReport) -> None:
    rows = sorted(report.documents, key=lambda d: (-(d.lag_seconds or 0.0), d.document_id))
    width = max([len("DOCUMENT"), *(len(d.document_id) for d in rows[:TABLE_ROWS])])
    click.echo(f"{'DOCUMENT':<{width}}  {'SOURCE':>6}  {'INDEX':>6}  {'LAG':>7}  "
               f"{'CHUNKS':>6}  STATUS")
    for d in rows[:TABLE_ROWS]:
        src = "-" if d.source_version is None else f"v{d.source_version}"
        idx = "-" if d.indexed_version is None else f"v{d.indexed_version}"
        idx += "x" if d.deleted_in_index else ""
        click.echo(f"{d.document_id:<{width}}  {src:>6}  {idx:>6}  {_fmt_lag(d.lag_seconds):>7}  "
                   f"{d.chunks:>6}  {d.status}")
    if len(rows) > TABLE_ROWS:
        click.echo(f"... and {len(rows) - TABLE_ROWS} more (most lagging first; --json for all)")
    unknown = "unknown (no source configured)"
    click.echo("")
    click.echo(f"mode: {report.mode}   index: {report.index}   source: {report.source or '-'}")
    click.echo(f"documents: {len(rows)}   behind: "
               f"{report.behind if report.source else unknown}   max lag: "
               f"{_fmt_lag(report.max_lag_seconds) if report.source else unknown}")
    dead = "unknown (Kafka unreachable)" if report.dead_letters is None else report.dead_letters
    queued = "" if report.queued is None else f"   queued: {report.queued}"
    click.echo(f"leftover versions: {report.leftover_versions}   dead letters: {dead}{queued}")
    click.echo(f"last reindex: {report.last_reindex.isoformat() if report.last_reindex else '-'}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (for scripts).")
@click.pass_obj
def status(settings: Settings, as_json: bool) -> None:
    """Freshness of the index: versions in source and index, lag, leftovers, dead letters."""
    try:
        report = build_report(settings)
    except (StoreError, QueueError) as exc:
        raise click.ClickException(f"cannot read the index: {exc}") from exc
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        _print_table(report)
