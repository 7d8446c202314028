"""What a mode is made of, opened from settings: one class per mode, chosen once.

``open_backends(settings)`` returns ``EmbeddedBackends`` (the SQLite index, the
SQLite scheduler file, the local queue) or ``KafkaBackends`` (Elasticsearch for
the index, the run log and the lease; Kafka for the change topic and its dead
letters). Everything else asks the bundle, never ``isinstance`` on a store, and
never the settings for the mode: ``backends_class(settings)`` is the one place
``settings.pipeline`` is read. What a command needs before anything is opened is
on the class (``queue_name``, ``doctor_checks()``, ``run()``, ``open_existing()``).

The embedded mode keeps three files under ``settings.embedded_dir``:
``index.sqlite3`` (chunks, document states, FTS5), ``queue.sqlite3`` (the
durable change queue and its dead letters) and ``scheduler.sqlite3`` (the
reindex run log and lease); the search adds ``search_runs.sqlite3`` (each
answer's run, for ``check_citations``). The index is apart from the queue so that
publishing never waits for a long chunk write, and the index can be deleted and
rebuilt without losing queued changes. The queue's topic is
``settings.kafka_topic``, the same name as in Kafka mode.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from consumers.dead_letter import DeadLetterSink
from consumers.local_dead_letters import LocalDeadLetterSink
from consumers.retry import HealthState
from consumers.worker import Worker
from indexing.core import Indexer
from metrics.definitions import WorkerMetrics
from policy_indexer.runtime.connections import kafka_connection
from policy_indexer.runtime.parts import ThreadPart
from policy_indexer.settings import Settings, mask_url
from reindex.backends_sqlite import SchedulerDatabase
from reindex.errors import LeaseError
from reindex.lease import LeaseBackend
from reindex.runs import RunLog
from store.base import Store
from store.errors import StoreError
from store.sqlite import SQLiteStore
from transport.consumer import EventConsumer
from transport.local_clients import LocalQueueConsumer, LocalQueuePublisher
from transport.local_queue import LocalQueue
from transport.publisher import EventPublisher

if TYPE_CHECKING:
    from embeddings.cache import EmbeddingCache
    from policy_indexer.runtime.dead_letters import DeadLetterView
    from policy_indexer.runtime.doctor import Check
    from retrieval.runs import RunLog as SearchRunLog
    from store.elasticsearch import ElasticsearchStore
    from store.search_index import ChunkReader, SearchIndex, VectorStore
    from store.sqlite_search import SQLiteSearchIndex

    class SearchBackend(SearchIndex, VectorStore, ChunkReader, Protocol):
        """A store's search side: both legs, the vectors the backfill writes, and chunks
        by id for the citation check."""

    class EmbeddingCacheBackend(EmbeddingCache, Protocol):
        def close(self) -> None: ...

DoctorCheck = Callable[[Settings], Iterator["Check"]]

INDEX_FILE = "index.sqlite3"
QUEUE_FILE = "queue.sqlite3"
SCHEDULER_FILE = "scheduler.sqlite3"
EMBEDDINGS_FILE = "embeddings.sqlite3"
SEARCH_RUNS_FILE = "search_runs.sqlite3"
# Room for what the change event adds to a webhook payload (received_at, field names).
EVENT_OVERHEAD_BYTES = 64 * 1024


def index_path(settings: Settings) -> Path:
    return settings.embedded_dir / INDEX_FILE


def queue_path(settings: Settings) -> Path:
    return settings.embedded_dir / QUEUE_FILE


def scheduler_path(settings: Settings) -> Path:
    return settings.embedded_dir / SCHEDULER_FILE


class IndexNotCreated(Exception):
    """The embedded index does not exist yet; the message says what creates it."""


@dataclass(frozen=True)
class JobBackends:
    """The reindex run log and lease of a mode, and how to close them."""

    run_log: RunLog
    lease: LeaseBackend
    close: Callable[[], None]


class Backends(Protocol):
    """The parts every command needs from a mode; see the two implementations below.

    What a command needs of the mode before opening anything is on the class
    (``backends_class(settings)``): ``queue_name``, ``doctor_checks()``, ``run()``."""

    settings: Settings
    queue_name: ClassVar[str]  # where the events wait, for people ("Kafka")

    @property
    def mode(self) -> str: ...

    @property
    def store(self) -> Store: ...

    def where(self) -> str:
        """Where the index lives, for people (a file, or a URL and an index name)."""

    def job_backends(self) -> JobBackends:
        """The run log and lease beside the index (opened, ready)."""

    def last_reconcile(self) -> datetime | None:
        """When the last successful (non-dry) reconcile ended; None if never (or unreadable)."""

    def dead_letters(self) -> int | None:
        """Dead letters held (None when the transport cannot say in time)."""

    def queued(self) -> int | None:
        """Changes waiting to be indexed, where the transport knows it cheaply."""

    def search_index(self) -> SearchBackend:
        """The store's search side (keyword and dense legs, vector storage)."""

    def embedding_cache(self) -> EmbeddingCacheBackend:
        """The content-addressed embedding cache beside the index."""

    def search_run_log(self) -> SearchRunLog:
        """The search run log beside the index (opened, ready; close it)."""

    def publisher(self) -> EventPublisher:
        """A publisher into the mode's change topic (close it)."""

    def index_connection(self) -> Store:
        """The index on a connection of its own, for a part in its own thread (close it)."""

    def ensure_ready(self) -> None:
        """What the worker needs exists (created if missing): the index, Kafka's topics."""

    def worker(
        self,
        metrics: WorkerMetrics,
        *,
        health: HealthState | None = None,
        checkpoint: Callable[[str], None] = ...,
    ) -> Worker:
        """The worker loop on the mode's consumer, index and dead letters."""

    def list_dead_letters(self) -> list[DeadLetterView]:
        """Every dead letter, oldest first, one per failed event (``DeadLetterError``)."""

    def retry_dead_letters(self, letters: Sequence[DeadLetterView]) -> int:
        """Put these dead letters back on the change topic; how many went back."""

    def close(self) -> None: ...


def make_worker(
    settings: Settings,
    store: Store,
    consumer: EventConsumer,
    dead_letters: DeadLetterSink,
    metrics: WorkerMetrics,
    *,
    health: HealthState | None,
    checkpoint: Callable[[str], None],
    write_behind: bool = False,
) -> Worker:
    """The one worker loop over a mode's consumer, index and dead letters."""
    processor = Indexer(store, checkpoint=checkpoint, on_unchanged=metrics.unchanged_content.inc,
                        on_tie=metrics.version_ties.inc)
    return Worker(
        consumer,
        processor,
        dead_letters,
        metrics=metrics,
        health=health,
        retry=settings.retry_policy(),
        commit=settings.commit_policy(),
        visibility=settings.visibility_policy(),
        max_records=settings.commit_every_records,
        write_behind=write_behind,
        checkpoint=checkpoint,
        unexpected_attempts=settings.worker_unexpected_error_attempts,
    )


def open_elasticsearch(settings: Settings) -> ElasticsearchStore:
    """The store on the configured nodes, with its credentials and CA."""
    # Imported here: the Elasticsearch client costs ~0.1 s at start and the embedded
    # mode never uses it.
    from store.elasticsearch import ElasticsearchStore  # noqa: PLC0415
    from store.es_mappings import IndexLayout  # noqa: PLC0415

    key = settings.elasticsearch_api_key
    password = settings.elasticsearch_password
    user = settings.elasticsearch_username
    ca = settings.elasticsearch_ca_file
    store = ElasticsearchStore.connect(
        settings.elasticsearch_nodes(),
        settings.index_prefix,
        api_key=key.get_secret_value() if key else None,
        basic_auth=(user, password.get_secret_value()) if user and password else None,
        ca_file=str(ca) if ca else None,
        ca_fingerprint=settings.elasticsearch_ca_fingerprint,
        verify_certs=settings.elasticsearch_verify_certs,
        timeout_s=settings.elasticsearch_timeout_seconds,
        layout=IndexLayout(settings.index_shards, settings.index_replicas),
    )
    store.bulk_max_actions = settings.bulk_max_actions
    store.bulk_max_bytes = settings.bulk_max_bytes
    return store


@dataclass
class EmbeddedBackends:
    """SQLite index + local queue + SQLite scheduler file, all under ``embedded_dir``."""

    settings: Settings
    sqlite: SQLiteStore
    queue: LocalQueue
    queue_name: ClassVar[str] = "the local queue"
    _closed: bool = field(default=False, init=False)
    _connections: list[SQLiteStore] = field(default_factory=list, init=False)
    # search indexes, closed before their stores: each may have a postings reader running
    _indexes: list[SQLiteSearchIndex] = field(default_factory=list, init=False)

    @classmethod
    def open(cls, settings: Settings) -> EmbeddedBackends:
        """Open (creating them if needed) the index and the queue; StoreError / QueueError."""
        store = SQLiteStore(index_path(settings))
        try:
            store.ensure_ready()
            queue = LocalQueue(queue_path(settings))
        except BaseException:
            store.close()
            raise
        return cls(settings, store, queue)

    @classmethod
    def open_existing(cls, settings: Settings) -> EmbeddedBackends:
        """``open``, once a run or a replay has made the index (else ``IndexNotCreated``)."""
        if not index_path(settings).exists():
            raise IndexNotCreated(
                f"no embedded index at {index_path(settings)} yet: `policy-indexer run` or "
                "`policy-indexer replay FILE` creates it (or set POLICY_INDEXER_EMBEDDED_DIR)"
            )
        return cls.open(settings)

    @staticmethod
    def doctor_checks() -> list[DoctorCheck]:
        """The embedded directory (writable, its SQLite files open)."""
        from policy_indexer.runtime.doctor import embedded  # noqa: PLC0415

        return [embedded]

    @staticmethod
    def run(settings: Settings, *, processes: int | None,
            echo: Callable[[str], None]) -> None:
        """``policy-indexer run``: every part in this process (``runtime.embedded``)."""
        from policy_indexer.runtime.embedded import run_embedded  # noqa: PLC0415

        run_embedded(settings, echo)

    @property
    def mode(self) -> str:
        return "embedded"

    @property
    def store(self) -> SQLiteStore:
        return self.sqlite

    @property
    def topic(self) -> str:
        return self.settings.kafka_topic

    def where(self) -> str:
        return str(index_path(self.settings))

    def publisher(self) -> LocalQueuePublisher:
        return LocalQueuePublisher(self.queue, self.topic)

    def index_connection(self) -> SQLiteStore:
        """A long reconcile or a monitor cycle never holds the worker's connection."""
        return SQLiteStore(index_path(self.settings))

    def ensure_ready(self) -> None:
        self.sqlite.ensure_ready()  # the queue's tables are made when it opens

    def worker(
        self,
        metrics: WorkerMetrics,
        *,
        health: HealthState | None = None,
        checkpoint: Callable[[str], None] = lambda _step: None,
    ) -> Worker:
        """A worker on the queue; raises ``ConsumerBusy`` if another process consumes it."""
        return self._worker_on(self._consumer(), metrics, health=health, checkpoint=checkpoint)

    def _consumer(self) -> LocalQueueConsumer:
        return LocalQueueConsumer(self.queue, self.topic,
                                  lease_ttl_s=self.settings.embedded_lease_seconds)

    def _worker_on(
        self,
        consumer: LocalQueueConsumer,
        metrics: WorkerMetrics,
        *,
        health: HealthState | None,
        checkpoint: Callable[[str], None],
    ) -> Worker:
        return make_worker(self.settings, self.sqlite, consumer,
                           LocalDeadLetterSink(self.queue, self.topic),
                           metrics, health=health, checkpoint=checkpoint)

    def start_worker(
        self,
        metrics: WorkerMetrics,
        *,
        health: HealthState | None = None,
        checkpoint: Callable[[str], None] = lambda _step: None,
        batch: int | None = None,
    ) -> ThreadPart:
        """``worker`` running in a thread part (replay, tests, bench); ``stop()`` it.

        ``batch``: changes taken a poll instead of ``commit_every_records``."""
        consumer = self._consumer()
        worker = self._worker_on(consumer, metrics, health=health, checkpoint=checkpoint)
        if batch is not None:
            worker.max_records = batch

        def stop() -> None:  # at once, not after the poll's timeout (0.5 s of every replay)
            worker.request_stop()
            consumer.wakeup()

        part = ThreadPart("queue worker", worker.run, stop, stop_timeout_s=60.0)
        part.start()
        return part

    def job_backends(self) -> JobBackends:
        database = SchedulerDatabase(scheduler_path(self.settings))
        try:
            database.ensure_ready()
        except BaseException:
            database.close()
            raise
        return JobBackends(database, database, database.close)

    def last_reconcile(self) -> datetime | None:
        if not scheduler_path(self.settings).exists():
            return None
        try:
            jobs = self.job_backends()
        except (StoreError, LeaseError, sqlite3.Error):
            return None
        try:
            record = jobs.run_log.last_success("reconcile")
        except (StoreError, sqlite3.Error):
            return None
        finally:
            jobs.close()
        return record.ended_at if record is not None else None

    def search_index(self) -> SearchBackend:
        """Over a connection of its own: searches and vector writes never wait for the
        worker's connection (WAL lets them read while it writes); closed with ``close``."""
        from store.sqlite_search import SQLiteSearchIndex  # noqa: PLC0415

        store = SQLiteStore(index_path(self.settings))
        self._connections.append(store)
        index = SQLiteSearchIndex(store)
        self._indexes.append(index)
        return index

    def embedding_cache(self) -> EmbeddingCacheBackend:
        from embeddings.cache_sqlite import SQLiteEmbeddingCache  # noqa: PLC0415

        return SQLiteEmbeddingCache(self.settings.embedded_dir / EMBEDDINGS_FILE)

    def search_run_log(self) -> SearchRunLog:
        """A file of its own: a search never waits for a chunk write to record its run,
        and the index can be rebuilt without losing the runs."""
        from retrieval.runs_sqlite import SQLiteRunLog  # noqa: PLC0415

        log = SQLiteRunLog(self.settings.embedded_dir / SEARCH_RUNS_FILE)
        try:
            log.ensure_ready()
        except BaseException:
            log.close()
            raise
        return log

    def dead_letters(self) -> int | None:
        return len(self.queue.dead_letters(self.topic))

    def list_dead_letters(self) -> list[DeadLetterView]:
        """The queue's ``dead_letters`` table; an id is the row id."""
        from policy_indexer.runtime.dead_letters import queue_letters  # noqa: PLC0415

        return queue_letters(self.queue, self.topic)

    def retry_dead_letters(self, letters: Sequence[DeadLetterView]) -> int:
        """Moved back onto the change topic in one transaction (a retry that fails again is
        a new dead letter, under a new id)."""
        return self.queue.requeue_dead_letters(self.topic, self.topic,
                                               [int(letter.letter_id) for letter in letters])

    def queued(self) -> int | None:
        return self.queue.pending(self.topic)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            for index in self._indexes:
                index.close()  # stops and joins its postings reader, if one runs
            for store in self._connections:
                store.close()
            self.queue.close()
            self.sqlite.close()


@dataclass
class KafkaBackends:
    """Elasticsearch (index, run log, lease) + Kafka (change topic, dead letters)."""

    settings: Settings
    es: ElasticsearchStore
    queue_name: ClassVar[str] = "Kafka"
    _closers: list[Callable[[], None]] = field(default_factory=list, init=False)

    @classmethod
    def open(cls, settings: Settings) -> KafkaBackends:
        return cls(settings, open_elasticsearch(settings))

    @classmethod
    def open_existing(cls, settings: Settings) -> KafkaBackends:
        """``open``: a missing index reads as empty (the workers make it)."""
        return cls.open(settings)

    @staticmethod
    def doctor_checks() -> list[DoctorCheck]:
        """Kafka (credentials, topics), then Elasticsearch (credentials, CA, templates)."""
        from policy_indexer.runtime.doctor import elasticsearch, kafka  # noqa: PLC0415

        return [kafka, elasticsearch]

    @staticmethod
    def run(settings: Settings, *, processes: int | None,
            echo: Callable[[str], None]) -> None:
        """``policy-indexer run``: the worker processes (``runtime.kafka``)."""
        from policy_indexer.runtime.kafka import run_kafka  # noqa: PLC0415

        run_kafka(settings, processes)

    def ensure_ready(self) -> None:
        """The change and dead-letter topics (created if missing: ``KafkaConnectError`` if
        they cannot be), then the index."""
        from policy_indexer.runtime.topics import create_configured_topics  # noqa: PLC0415

        create_configured_topics(self.settings)
        self.es.ensure_ready()

    def worker(
        self,
        metrics: WorkerMetrics,
        *,
        health: HealthState | None = None,
        checkpoint: Callable[[str], None] = lambda _step: None,
    ) -> Worker:
        """A worker in the consumer group; its producer (dead letters) closes with ``close``."""
        from consumers.kafka_dead_letters import KafkaDeadLetterSink  # noqa: PLC0415
        from transport.kafka import ProducerPolicy  # noqa: PLC0415
        from transport.kafka_consumer import KafkaEventConsumer  # noqa: PLC0415
        from transport.kafka_producer import KafkaSender  # noqa: PLC0415

        s = self.settings
        connection = kafka_connection(s)
        sender = KafkaSender(connection, ProducerPolicy())
        self._closers.append(sender.close)
        consumer = KafkaEventConsumer.connect(
            connection, s.kafka_group_id, s.kafka_topic,
            max_poll_records=s.commit_every_records,
            session_timeout_ms=s.kafka_session_timeout_ms,
        )
        # write-behind: chunk writes to Elasticsearch overlap the chunking of the next event
        return make_worker(s, self.es, consumer,
                           KafkaDeadLetterSink(sender, s.kafka_dead_letter_topic), metrics,
                           health=health, checkpoint=checkpoint, write_behind=True)

    @property
    def mode(self) -> str:
        return "kafka"

    @property
    def store(self) -> ElasticsearchStore:
        return self.es

    def where(self) -> str:
        nodes = ",".join(map(mask_url, self.settings.elasticsearch_nodes()))
        return f"{nodes} {self.es.names.chunks}"

    def job_backends(self) -> JobBackends:
        # Imported here: only Kafka mode needs the Elasticsearch run log.
        from reindex.backends_es import (  # noqa: PLC0415
            ElasticsearchLeaseBackend,
            ElasticsearchRunLog,
        )

        prefix = self.settings.index_prefix
        replicas = self.settings.index_replicas
        run_log = ElasticsearchRunLog(self.es.client, prefix, replicas=replicas)
        lease = ElasticsearchLeaseBackend(self.es.client, prefix, replicas=replicas)
        run_log.ensure_ready()
        lease.ensure_ready()
        return JobBackends(run_log, lease, lambda: None)

    def last_reconcile(self) -> datetime | None:
        from reindex.backends_es import ElasticsearchRunLog  # noqa: PLC0415

        try:
            record = ElasticsearchRunLog(self.es.client, self.settings.index_prefix).last_success(
                "reconcile"
            )
        except StoreError:
            return None  # no run log yet: never reindexed
        return record.ended_at if record is not None else None

    def index_connection(self) -> ElasticsearchStore:
        return open_elasticsearch(self.settings)

    def publisher(self) -> EventPublisher:
        """The Kafka publisher (the webhook's bounds: its publish timeout and body size)."""
        from transport.kafka_producer import (  # noqa: PLC0415
            KafkaEventPublisher,
            KafkaPublisherConfig,
        )

        s = self.settings
        return KafkaEventPublisher(KafkaPublisherConfig(
            bootstrap_servers=kafka_connection(s),
            topic=s.kafka_topic,
            timeout_seconds=s.webhook_publish_timeout_seconds,
            max_message_bytes=s.webhook_max_body_bytes + EVENT_OVERHEAD_BYTES,
        ))

    def search_index(self) -> SearchBackend:
        from store.es_search import ElasticsearchSearchIndex  # noqa: PLC0415

        return ElasticsearchSearchIndex(self.es)

    def embedding_cache(self) -> EmbeddingCacheBackend:
        from embeddings.cache_elasticsearch import ElasticsearchEmbeddingCache  # noqa: PLC0415
        from store.es_requests import translate  # noqa: PLC0415

        cache = ElasticsearchEmbeddingCache(self.es.client, self.settings.index_prefix,
                                            replicas=self.settings.index_replicas)
        # Asked through the store's translation first, so that refused credentials or an
        # unverified certificate are its one line (StoreAccessError), which every command
        # prints, not an embedding-cache error that calls them "unreachable".
        translate(f"check index {cache.index!r}", self.es.client.indices.exists,
                  index=cache.index)
        cache.ensure_ready()
        return cache

    def search_run_log(self) -> SearchRunLog:
        from retrieval.runs_es import ElasticsearchRunLog  # noqa: PLC0415

        log = ElasticsearchRunLog(self.es.client, self.settings.index_prefix,
                                  replicas=self.settings.index_replicas)
        log.ensure_ready()
        return log

    def dead_letters(self) -> int | None:
        """Records in the dead-letter topic (None when Kafka cannot say in time)."""
        from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415
        from kafka.errors import KafkaError  # noqa: PLC0415

        s = self.settings
        try:
            consumer = KafkaConsumer(**kafka_connection(s).client_options(),
                                     request_timeout_ms=5000)
        except KafkaError:
            return None
        try:
            topic = s.kafka_dead_letter_topic
            parts = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
            ends, starts = consumer.end_offsets(parts), consumer.beginning_offsets(parts)
            return int(sum(ends[tp] - starts[tp] for tp in parts))
        except KafkaError:
            return None
        finally:
            consumer.close()

    def queued(self) -> int | None:
        return None  # the consumer group's lag: see the worker's metrics

    def list_dead_letters(self) -> list[DeadLetterView]:
        """The dead-letter topic, read by a consumer of no group; an id is
        ``<partition>:<offset>``."""
        from policy_indexer.runtime.dead_letters import kafka_letters  # noqa: PLC0415

        return kafka_letters(self.settings)

    def retry_dead_letters(self, letters: Sequence[DeadLetterView]) -> int:
        """Republished to the change topic (Kafka cannot remove a record: they stay listed)."""
        from policy_indexer.runtime.dead_letters import kafka_republish  # noqa: PLC0415

        return kafka_republish(self.settings, letters)

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()
        self.es.close()


def backends_class(settings: Settings) -> type[EmbeddedBackends] | type[KafkaBackends]:
    """The mode's backends class: the one place ``settings.pipeline`` is read (a test in
    ``tests/unit/architecture`` keeps it so); everything else asks the backends."""
    return KafkaBackends if settings.pipeline == "kafka" else EmbeddedBackends


def open_backends(settings: Settings, *,
                  existing: bool = False) -> EmbeddedBackends | KafkaBackends:
    """The backends of the configured mode; raises StoreError / QueueError.

    ``existing``: ``IndexNotCreated`` instead of creating the embedded index (``status``).
    """
    mode = backends_class(settings)
    return mode.open_existing(settings) if existing else mode.open(settings)
