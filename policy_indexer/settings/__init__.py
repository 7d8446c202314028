"""The one place configuration is read.

Every setting comes from the environment with the prefix ``POLICY_INDEXER_``
(``POLICY_INDEXER_KAFKA_BOOTSTRAP_SERVERS=...``) or from a ``.env`` file, and
can be handed a plain dict in tests: ``Settings(**{"kafka_topic": "t"})``.
Core packages never read settings; the command line passes values down.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger
from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from consumers.commit_policy import CommitPolicy
from consumers.retry import RetryPolicy

if TYPE_CHECKING:
    from webhooks.limits import HttpLimits
from deleter.sweep import DEFAULT_GRACE
from embeddings.registry import ENCODER_NAMES
from embeddings.views import parse_view_specs
from policy_indexer.runtime.probes import ProbePolicy
from sources.hidden import parse_hidden_allow
from sources.label_defaults import parse_label_defaults
from sources.limits import MAX_FILE_BYTES, MAX_PAGE_SIZE, PAGE_SIZE, TIMEOUT_SECONDS
from store.limits import BULK_MAX_ACTIONS, BULK_MAX_BYTES
from webhooks.config import MAX_BODY_BYTES, RETRY_AFTER_SECONDS, TIMESTAMP_TOLERANCE_SECONDS


class Settings(BaseSettings):
    """Typed configuration of every policy-indexer process."""

    model_config = SettingsConfigDict(
        env_prefix="POLICY_INDEXER_",
        env_file=".env",
        env_file_encoding="utf-8",
        # Keys of other tools in a shared .env are not ours and must not crash every
        # command; our own prefix with an unknown name is refused by ``unknown_settings``.
        extra="ignore",
        frozen=True,
    )

    # Transport ---------------------------------------------------------
    kafka_bootstrap_servers: str = Field(
        "127.0.0.1:9092", description="Comma-separated host:port list of Kafka brokers."
    )
    kafka_topic: str = Field("policy.document-changes", min_length=1)
    kafka_dead_letter_topic: str = Field("policy.document-changes.dead-letter", min_length=1)
    kafka_group_id: str = Field("policy-indexer", min_length=1)

    # Store -------------------------------------------------------------
    elasticsearch_url: str = Field(
        "http://127.0.0.1:9200", description="One node; elasticsearch_urls, when set, wins."
    )
    elasticsearch_api_key: SecretStr | None = None
    index_prefix: str = Field(
        "policy", pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Prefix of every index and alias."
    )

    # Production connections --------------------------------------------
    # Kafka: every producer, consumer and admin client the project creates uses these.
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT", description="PLAINTEXT locally; SASL_SSL (or SSL) on a managed cluster."
    )
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = Field(
        None, description="Required with SASL_*: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512."
    )
    kafka_sasl_username: str | None = None
    kafka_sasl_password: SecretStr | None = None
    kafka_sasl_password_file: Path | None = Field(
        None, description="The SASL password in a file (a mounted secret)."
    )
    kafka_ca_file: Path | None = Field(
        None, description="PEM CA bundle the brokers' certificates are checked against "
        "(default: the system's)."
    )
    kafka_cert_file: Path | None = Field(None, description="PEM client certificate (mTLS).")
    kafka_key_file: Path | None = Field(None, description="PEM private key of kafka_cert_file.")
    kafka_key_password: SecretStr | None = None
    kafka_key_password_file: Path | None = None
    kafka_ssl_check_hostname: bool = Field(
        True, description="Check that a broker's certificate names the host connected to."
    )
    kafka_replication_factor: int = Field(
        1, ge=1, le=32, description="Replicas of the topics `topics create` makes: 1 suits one "
        "local broker; 3 on a cluster."
    )
    kafka_min_insync_replicas: int = Field(
        1, ge=1, le=32, description="min.insync.replicas of the topics: 1 locally; 2 on a "
        "cluster with replication factor 3 (acks=all then survives one broker down)."
    )
    # Elasticsearch: one node (elasticsearch_url) or several, basic auth or an API key
    # as secrets (never inside a URL), a CA file or the CA's fingerprint.
    elasticsearch_urls: str | None = Field(
        None, description="Comma-separated node URLs (https://es-1:9200,https://es-2:9200); "
        "wins over elasticsearch_url."
    )
    elasticsearch_username: str | None = None
    elasticsearch_password: SecretStr | None = None
    elasticsearch_password_file: Path | None = Field(
        None, description="The password in a file (a mounted secret)."
    )
    elasticsearch_api_key_file: Path | None = Field(
        None, description="The API key (the encoded form) in a file (a mounted secret)."
    )
    elasticsearch_ca_file: Path | None = Field(
        None, description="PEM CA bundle the nodes' certificates are checked against."
    )
    elasticsearch_ca_fingerprint: str | None = Field(
        None, pattern=r"^([0-9A-Fa-f]{2}:?){31}[0-9A-Fa-f]{2}$",
        description="SHA-256 fingerprint of the cluster's CA (what Elasticsearch prints at "
        "first start), instead of a CA file.",
    )
    elasticsearch_verify_certs: bool = Field(
        True, description="Check the nodes' certificates; off only for a throwaway cluster."
    )
    index_shards: int = Field(1, ge=1, le=1024, description="Primary shards of a new index.")
    index_replicas: int = Field(
        0, ge=0, le=32, description="Replicas of a new index: 0 suits one node; 1 or more on a "
        "cluster."
    )
    secrets_dir: Path | None = Field(
        None, description="A directory of secret files, one per setting, each named as its "
        "variable (POLICY_INDEXER_ELASTICSEARCH_PASSWORD), as Kubernetes mounts a Secret. "
        "Read from the environment only.",
    )

    @model_validator(mode="before")
    @classmethod
    def _secret_files(cls, data: Any) -> Any:
        """``X_FILE`` settings: the secret X read from that file (a mounted secret)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name in SECRET_FILE_SETTINGS:
            path = data.get(f"{name}_file")
            if not path:
                continue
            if data.get(name):
                raise ValueError(f"set {name} or {name}_file, not both")
            data[name] = read_secret_file(Path(path), f"{name}_file")
        return data

    @model_validator(mode="after")
    def _connection_rules(self) -> Settings:
        sasl = self.kafka_security_protocol.startswith("SASL_")
        if sasl and not (self.kafka_sasl_mechanism and self.kafka_sasl_username
                         and self.kafka_sasl_password):
            raise ValueError(
                f"kafka_security_protocol {self.kafka_security_protocol} needs "
                "kafka_sasl_mechanism, kafka_sasl_username and kafka_sasl_password(_file)"
            )
        if (self.kafka_cert_file is None) != (self.kafka_key_file is None):
            raise ValueError("kafka_cert_file and kafka_key_file go together")
        if self.elasticsearch_api_key and (self.elasticsearch_username
                                           or self.elasticsearch_password):
            raise ValueError("set elasticsearch_api_key or elasticsearch_username/password, "
                             "not both")
        if (self.elasticsearch_username is None) != (self.elasticsearch_password is None):
            raise ValueError("elasticsearch_username and elasticsearch_password go together")
        if self.elasticsearch_ca_file and self.elasticsearch_ca_fingerprint:
            raise ValueError("set elasticsearch_ca_file or elasticsearch_ca_fingerprint, "
                             "not both")
        if self.kafka_min_insync_replicas > self.kafka_replication_factor:
            raise ValueError(
                f"kafka_min_insync_replicas {self.kafka_min_insync_replicas} is above "
                f"kafka_replication_factor {self.kafka_replication_factor}: no write would "
                "ever be acknowledged"
            )
        for url in self.elasticsearch_nodes():
            parsed = urlsplit(url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise ValueError(f"elasticsearch node {mask_url(url)!r} is not an "
                                 "http(s)://host[:port] URL")
        return self

    def elasticsearch_nodes(self) -> list[str]:
        """The node URLs: ``elasticsearch_urls`` split, else ``elasticsearch_url``."""
        if self.elasticsearch_urls:
            return [u.strip() for u in self.elasticsearch_urls.split(",") if u.strip()]
        return [self.elasticsearch_url]

    # Observability -----------------------------------------------------
    metrics_host: str = "127.0.0.1"
    metrics_port: int = Field(9464, ge=0, le=65535)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "console"] = "json"
    readiness_grace_seconds: float = Field(
        60.0, ge=0,
        description="/readyz stays 200 this long while a process retries a dependency or "
        "its passes fail (the reason in the body), then 503; 0: 503 at once.",
    )
    liveness_heartbeat_seconds: float | None = Field(
        180.0, gt=0,
        description="/healthz is 503 when the worker loop has not turned for this long "
        "(a stuck loop, restarted by the orchestrator); unset: not judged.",
    )

    # Indexing worker ---------------------------------------------------
    pipeline: Literal["embedded", "kafka"] = Field(
        "embedded",
        description="'kafka': Kafka + Elasticsearch workers; 'embedded': one process.",
    )
    worker_processes: int = Field(1, ge=1, le=64, description="Worker processes `run` starts.")
    kafka_partitions: int = Field(
        3, ge=1, description="Partitions of the change topic when `run` or `replay` creates it."
    )
    kafka_session_timeout_ms: int = Field(
        10000, ge=1000, description="How soon the group notices a dead worker (broker min 6000)."
    )
    commit_every_records: int = Field(200, ge=1)
    replay_batch_records: int = Field(
        1000, ge=1,
        description="Changes the embedded `replay` worker takes a poll. The whole log is queued "
        "first, so a batch writes each of its documents' newest version once; measured on 1,234 "
        "mozilla changes: 200 14.0 s, 500 10.9 s, 1,000 10.2 s, 2,000 10.8 s.",
    )
    commit_every_seconds: float = Field(1.0, gt=0)
    retry_initial_seconds: float = Field(0.2, gt=0)
    retry_max_seconds: float = Field(10.0, gt=0)
    retry_max_attempts: int | None = Field(
        None, ge=1, description="Attempts before giving up on a transient failure; None: forever."
    )
    elasticsearch_timeout_seconds: float = Field(10.0, gt=0)
    bulk_max_actions: int = Field(BULK_MAX_ACTIONS, ge=1)
    bulk_max_bytes: int = Field(BULK_MAX_BYTES, ge=1024)
    sweep_grace_seconds: float = Field(
        DEFAULT_GRACE.total_seconds(), ge=0,
        description="The sweep leaves younger chunks above a document's state alone."
    )
    # Webhook receiver --------------------------------------------------
    webhook_host: str = "127.0.0.1"
    webhook_port: int = Field(8080, ge=0, le=65535)
    webhook_secrets: list[SecretStr] = Field(
        default_factory=list,
        max_length=2,
        description="HMAC-SHA256 secrets as a JSON list, at least 16 bytes each: one, or two "
        'while rotating (POLICY_INDEXER_WEBHOOK_SECRETS=\'["new...", "old..."]\').',
    )
    webhook_timestamp_tolerance_seconds: float = Field(
        TIMESTAMP_TOLERANCE_SECONDS, gt=0,
        description="A signature older or newer than this is refused (replays)."
    )
    webhook_max_body_bytes: int = Field(MAX_BODY_BYTES, ge=1024)
    webhook_publish_timeout_seconds: float = Field(
        5.0, gt=0, le=120, description="How long a request waits for Kafka's acks=all before 503."
    )
    webhook_retry_after_seconds: int = Field(
        RETRY_AFTER_SECONDS, ge=1, description="Retry-After sent with a 503."
    )

    # Sources and the freshness monitor ---------------------------------
    source_kind: Literal["cms", "folder", "changelog", "git"] | None = Field(
        None, description="Where the library lives: 'cms' (HTTP JSON API), 'folder', 'changelog', "
        "'git' (source_url: the remote; source_path: the local mirror)."
    )
    source_url: str | None = Field(None, description="cms: base URL of the CMS API.")
    source_auth_header: SecretStr | None = Field(
        None, description="cms: one header for every request, 'Authorization: Bearer ...'."
    )
    source_path: str | None = Field(None, description="folder: root; changelog: the log file.")
    source_page_size: int = Field(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)
    source_timeout_seconds: float = Field(TIMEOUT_SECONDS, gt=0)
    monitor_interval_seconds: float = Field(
        60.0, gt=0, description="How often the monitor lists the source and the index."
    )
    monitor_metrics_port: int = Field(9465, ge=0, le=65535, description="Monitor's /metrics.")
    monitor_max_document_series: Annotated[int, Field(ge=0)] | Literal["all"] = Field(
        100,
        description="Per-document lag series exported: the N most lagging, or 'all'.",
    )
    freshness_lag_bound_seconds: float = Field(
        3600.0,
        gt=0,
        description="THE lag bound: the max-lag alert fires above it. Exported by the monitor "
        "as policy_indexer_lag_bound_seconds, which the alert rule compares against.",
    )
    leftover_bound_seconds: float = Field(
        1800.0,
        gt=0,
        description="Leftover versions older than this fire an alert "
        "(exported as policy_indexer_leftover_bound_seconds).",
    )

    language_model_cache_dir: Path | None = Field(
        default_factory=lambda: Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "policy-indexer",
        description="Where the language detector's model is kept uncompressed (68 MB), so a "
        "process maps it in ~0.01 s, not ~1.4 s; unset it (empty) for none. An unwritable "
        "place is logged and the packaged model loaded each time.",
    )

    # Embedded mode -----------------------------------------------------
    embedded_dir: Path = Field(
        Path(".policy-indexer"),
        description="Where the embedded mode keeps its SQLite files: index.sqlite3 (chunks, "
        "states, FTS5 search) and queue.sqlite3 (the durable change queue, dead letters).",
    )
    embedded_lease_seconds: float = Field(
        15.0, gt=0, description="A silent consumer of the local queue loses it after this long."
    )

    # Folder watcher of the embedded mode -------------------------------
    # It watches source_path when source_kind is 'folder' (the folder the monitor
    # and the nightly reindex list, so all three agree on ids and versions).
    watch_debounce_ms: int = Field(
        400, ge=10, le=60_000,
        description="The folder watcher groups a burst of file changes for at most this long.",
    )
    watch_rescan_seconds: float = Field(
        5.0, gt=0,
        description="Without file changes, the watcher compares the folder again this often "
        "(retries a failed publish, catches changes the OS did not report).",
    )

    # Folder hardening --------------------------------------------------
    # A bad file is that file's problem only: the folder listing (watcher, monitor,
    # status, reconcile) names it unreadable and goes on; see docs/folder-watch.md.
    folder_max_file_bytes: int = Field(
        MAX_FILE_BYTES, ge=1024, le=1024 * 1024 * 1024,
        description="A folder file above this size is listed as unreadable (too_large) and "
        "never read: a policy document is some kB, a bigger file is a mistake (an export).",
    )
    # Hidden names and hard links: see docs/folder-watch.md.
    folder_hidden_allow: str = Field(
        "", description="Hidden names (starting with '.') that are part of the library anyway, "
        "comma-separated (e.g. '.well-known'). Any other hidden folder or file, listed or "
        "reached through a symbolic link (.git/config, .env), is never read.",
    )
    folder_allow_hard_links: bool = Field(
        False, description="Read folder files that have more than one hard link. Off: such a "
        "file is listed unreadable (hard_link), since its other name may be outside the library.",
    )
    source_default_access_labels: str = Field(
        "", description="folder and git sources: access_labels for a file whose front matter "
        "(or <meta>) sets none, by glob of its path in the library, first match wins: "
        "'hr/**=staff,hr; internal/**=staff; **=public'. Empty: no default. A front matter "
        "with an empty or misspelt access_labels key is still refused.",
    )
    watch_restart_initial_seconds: float = Field(
        1.0, gt=0, description="A folder watcher that failed starts again after this long, "
        "doubling at each failure in a row up to watch_restart_max_seconds.",
    )
    watch_restart_max_seconds: float = Field(
        60.0, gt=0, description="The longest wait before a failed folder watcher starts again.",
    )
    monitor_first_cycle_wait_seconds: float = Field(
        300.0, ge=0,
        description="The embedded run's monitor measures only once the first indexing is "
        "done (else it would report every document missing), or after this long at most.",
    )

    @field_validator("language_model_cache_dir", mode="before")
    @classmethod
    def _empty_is_no_cache(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("folder_hidden_allow")
    @classmethod
    def _hidden_names(cls, value: str) -> str:
        parse_hidden_allow(value)  # each one name starting with '.'
        return value

    @field_validator("source_default_access_labels")
    @classmethod
    def _label_defaults(cls, value: str) -> str:
        parse_label_defaults(value)  # each rule '<glob>=<labels>', the labels checked
        return value

    @field_validator("watch_restart_max_seconds")
    @classmethod
    def _restart_bounds(cls, value: float, info: ValidationInfo) -> float:
        initial = info.data.get("watch_restart_initial_seconds")
        if initial is not None and value < initial:
            raise ValueError(f"watch_restart_max_seconds {value!r} is below "
                             f"watch_restart_initial_seconds {initial!r}")
        return value
    # End of folder hardening -------------------------------------------

    # Nightly reindex and its scheduler ---------------------------------
    reindex_cron: str = Field(
        "0 2 * * *",
        description="When the reconcile runs: a 5-field crontab (minute hour day month "
        "day-of-week) in reindex_timezone. Default: 02:00 every night.",
    )
    reindex_timezone: str = Field("UTC", description="IANA zone of reindex_cron (Europe/Paris).")
    reindex_max_delete_fraction: float = Field(
        0.10,
        ge=0,
        le=1,
        description="A reconcile refuses to delete more than this fraction of the indexed "
        "documents unless run with --allow-mass-delete.",
    )
    reindex_batch_size: int = Field(
        200, ge=1, le=10_000,
        description="Change events a reconcile hands to the worker's batch processing at once.",
    )
    reindex_misfire_grace_seconds: float = Field(
        3600.0, gt=0, description="A job that could not start on time still runs this late."
    )
    sweep_interval_seconds: float = Field(3600.0, gt=0, description="How often the sweep runs.")
    scheduler_lease_seconds: float = Field(
        300.0,
        gt=0,
        description="A job's lease (one scheduler replica acts) expires this long after its "
        "last renewal; renewed every third of it while the job runs.",
    )
    scheduler_metrics_port: int = Field(9466, ge=0, le=65535, description="Scheduler's /metrics.")

    # search_policy -----------------------------------------------------
    search_host: str = Field("127.0.0.1", description="Where `serve` listens (POST /search, /mcp).")
    search_port: int = Field(8090, ge=0, le=65535)
    search_api_keys: SecretStr | None = Field(
        None,
        description="API keys of the search callers and their permission labels, as JSON: "
        '{"<key-id>": {"key": "<secret, 16+ bytes>", "labels": ["public", "agents"]}}. '
        "A caller's labels come from its key, never from its request.",
    )
    search_api_keys_file: Path | None = Field(
        None, description="The same JSON in a file (a mounted secret); wins over search_api_keys."
    )
    mcp_api_key: SecretStr | None = Field(
        None, description="`policy-indexer mcp` (stdio): the key (one of search_api_keys) whose "
        "labels the process's one caller gets.",
    )
    search_encoder: Literal["minilm", "hashing", "none"] = Field(
        "minilm",
        description="Dense leg: 'minilm' (int8 all-MiniLM-L6-v2, shipped in a package, CPU), "
        "'hashing' (a small deterministic encoder, no model), 'none' (keyword leg only).",
    )
    encoders: str | None = Field(
        None, description="Dense views, one dense leg each, fused: a comma-separated list of "
        "NAME[+wWORDS[sSTRIDE]][*WEIGHT] (NAME: minilm, bge-small, e5-small, hashing; "
        "+wWORDS: the chunk cut into windows of WORDS words, scored by its best window; "
        "*WEIGHT: the leg's share in the fusion). The first is the primary: its cosine is "
        "the confidence. Unset: the chosen default (docs/search.md); empty: keyword only.",
    )
    search_threshold: float | None = Field(
        None, description="The 'no document' threshold; None: the measured default."
    )
    # A cross-encoder over the fused top, where the deployment has one (docs/search.md).
    reranker_path: Path | None = Field(
        None, description="An ONNX cross-encoder (its tokenizer.json beside it) that rescores "
        "the fused top; its best score is the confidence. Unset: no reranker.",
    )
    reranker_sha256: str | None = Field(
        None, pattern=r"^[0-9a-fA-F]{64}$",
        description="The sha256 of the reranker_path file, checked at start (required with it).",
    )
    reranker_threshold: float | None = Field(
        None, description="The reranker's 'no document' threshold, on its own logit scale "
        "(required with reranker_path; choose it with `policy-indexer eval`).",
    )
    reranker_candidates: int = Field(
        30, ge=1, le=200, description="How many of the fused top the reranker rescores.")
    reranker_max_length: int = Field(
        512, ge=8, le=8192, description="Tokens of a question/passage pair the reranker reads "
        "(within its model's positions: checked at start).",
    )
    search_metrics_token: SecretStr | None = Field(
        None, description="GET /metrics on the search port needs 'Authorization: Bearer "
        "<this>' (16+ bytes). Unset: /metrics there is 404, and the process's metrics are "
        "on its loopback metrics server only (metrics_host:metrics_port).",
    )
    search_metrics_document_ids: bool = Field(
        True, description="policy_indexer_search_document_retrievals_total{document_id}; "
        "false: no per-document series (no document id, restricted ones included, in a scrape).",
    )
    search_runs_retention_days: int = Field(
        30, ge=1, le=3650, description="Search runs (each answer's run_id, what "
        "check_citations checks a reply against) older than this many days are removed by "
        "the hourly sweep.",
    )
    search_runs_max: int = Field(
        1_000_000, ge=1, description="The sweep keeps at most this many search runs (the "
        "newest).",
    )
    embed_batch_size: int = Field(32, ge=1, le=1024, description="Chunks encoded a round.")
    embed_threads: int = Field(
        1, ge=1, le=64,
        description="CPU threads of the encoder (1 keeps the indexing worker a core of its own).",
    )
    embed_idle_seconds: float = Field(
        1.0, gt=0, description="The vector backfill looks for chunks without vectors this often."
    )

    # CMS adapters ------------------------------------------------------
    # POST /webhooks/<adapter>; each adapter is on when its secrets are set. One
    # secret, or two while rotating, as a JSON list (16+ bytes each).
    webhook_github_secrets: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="GitHub push: the webhook's secret(s) (X-Hub-Signature-256).",
    )
    webhook_gitlab_tokens: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="GitLab push: the webhook's secret token(s) (X-Gitlab-Token).",
    )
    webhook_standard_secrets: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="Standard Webhooks: whsec_<base64> secret(s) of the relay that sends our "
        "payload (webhook-signature); the tolerance is webhook_timestamp_tolerance_seconds.",
    )
    git_repository: str | None = Field(
        None, description="The repository pushes are accepted for: GitHub 'owner/name', GitLab "
        "'group/project' (with source_kind 'git').",
    )
    git_branch: str = Field("main", min_length=1, description="The branch that is the library.")
    git_path_prefix: str = Field(
        "", description="The library's folder inside the repository ('' for the root)."
    )
    git_poll_interval_seconds: float | None = Field(
        None, gt=0, description="Polling mode: the embedded run fetches the branch this often "
        "and publishes its changes, no webhook needed (None: off).",
    )
    git_timeout_seconds: float = Field(120.0, gt=0, description="A git fetch gives up after this.")

    # CMS adapters: Contentful, Sanity, Strapi --------------------------
    # Contentful, Sanity, Strapi: each on when its secrets are set (a JSON list,
    # two while rotating). *_fields maps our fields (title, body, scope,
    # valid_from, valid_to, access_labels) to the CMS's (dotted paths);
    # *_api_url/_api_token: the read API used when a payload lacks them.
    webhook_contentful_secrets: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="Contentful: the space's request-verification signing secret(s), 64 chars.",
    )
    webhook_contentful_signed_path: str = Field(
        "/webhooks/contentful", pattern=r"^/", description="Contentful: the path of the webhook "
        "URL configured in Contentful (what it signs; differs from ours behind a proxy).",
    )
    webhook_contentful_locale: str = Field("en-US", min_length=1)
    webhook_contentful_content_types: list[str] = Field(
        default_factory=list, description="Contentful: the content types that are the library "
        "(empty: every entry).",
    )
    webhook_contentful_fields: dict[str, str] = Field(default_factory=dict)
    webhook_contentful_api_url: str | None = Field(
        None, description="Contentful Delivery API, e.g. https://cdn.contentful.com.")
    webhook_contentful_api_token: SecretStr | None = None
    webhook_sanity_secrets: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="Sanity: the GROQ webhook's secret(s) (sanity-webhook-signature).",
    )
    webhook_sanity_fields: dict[str, str] = Field(default_factory=dict)
    webhook_sanity_api_url: str | None = Field(
        None, description="Sanity API, e.g. https://<project>.api.sanity.io.")
    webhook_sanity_api_token: SecretStr | None = None
    webhook_sanity_dataset: str | None = Field(
        None, description="Sanity dataset to read from (default: the sanity-dataset header).")
    webhook_strapi_tokens: list[SecretStr] = Field(
        default_factory=list, max_length=2,
        description="Strapi: the token(s) its webhook sends as 'Authorization: Bearer <token>'.",
    )
    webhook_strapi_fields: dict[str, str] = Field(default_factory=dict)
    webhook_strapi_api_url: str | None = Field(
        None, description="Strapi REST API base, e.g. https://cms.example.com.")
    webhook_strapi_api_token: SecretStr | None = None
    webhook_strapi_api_paths: dict[str, str] = Field(
        default_factory=dict, description="Strapi: model -> REST path ({'policy': "
        "'/api/policies'}); when set, only these models are the library.",
    )
    webhook_cms_api_timeout_seconds: float = Field(
        10.0, gt=0, description="A read of the Contentful, Sanity or Strapi API gives up after "
        "this.")

    # Hardening: unexpected errors, lease holders, hostile clients ------
    worker_unexpected_error_attempts: int = Field(
        3, ge=1, le=100, description="Tries of one event that raises an unexpected exception "
        "before it is dead-lettered (reason 'unexpected') and the worker goes on.")
    http_header_timeout_seconds: float = Field(
        10.0, gt=0, description="Webhook and search servers: a request's headers must arrive "
        "within this (an idle connection is closed after it too).")
    http_body_timeout_seconds: float = Field(
        60.0, gt=0, description="Webhook and search servers: a request's whole body must "
        "arrive within this after its headers.")
    http_keep_alive_seconds: float = Field(
        5.0, ge=1, description="Webhook and search servers: an idle kept-alive connection is "
        "closed after this.")
    http_max_connections: int = Field(
        512, ge=1, description="Webhook and search servers: connections at once; one more "
        "closes the one waiting longest for its headers. Keep it below the fd limit.")
    # End of hardening --------------------------------------------------

    def http_limits(self) -> HttpLimits:
        """The limits every HTTP server of the project runs under (``webhooks.serve``)."""
        from webhooks.limits import HttpLimits  # noqa: PLC0415 - no webhooks import at start

        return HttpLimits(
            header_timeout_s=self.http_header_timeout_seconds,
            body_timeout_s=self.http_body_timeout_seconds,
            keep_alive_s=self.http_keep_alive_seconds,
            max_connections=self.http_max_connections,
        )

    @field_validator("encoders")
    @classmethod
    def _known_views(cls, value: str | None) -> str | None:
        if value is not None:
            names = {spec.name for spec in parse_view_specs(value)} - set(ENCODER_NAMES)
            if names:
                raise ValueError(f"unknown encoder {sorted(names)}; known: "
                                 f"{', '.join(ENCODER_NAMES)}")
        return value

    @field_validator("search_metrics_token")
    @classmethod
    def _metrics_token_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value().encode("utf-8")) < 16:
            raise ValueError("search_metrics_token needs at least 16 bytes")
        return value

    @model_validator(mode="after")
    def _reranker_complete(self) -> Settings:
        given = [name for name in ("reranker_sha256", "reranker_threshold")
                 if getattr(self, name) is not None]
        if self.reranker_path is None:
            if given:
                raise ValueError(f"{' and '.join(given)} set without reranker_path")
        elif len(given) < 2:
            missing = {"reranker_sha256", "reranker_threshold"} - set(given)
            raise ValueError(f"reranker_path needs {' and '.join(sorted(missing))} (a "
                             "cross-encoder's scale is its own: no default threshold)")
        return self

    @field_validator("reindex_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"reindex_timezone {value!r} is not an IANA time zone") from exc
        return value

    @field_validator("reindex_cron")
    @classmethod
    def _valid_cron(cls, value: str) -> str:
        try:
            CronTrigger.from_crontab(value, timezone="UTC")
        except ValueError as exc:
            raise ValueError(f"reindex_cron {value!r} is not a 5-field crontab: {exc}") from exc
        return value

    def retry_policy(self) -> RetryPolicy:
        """How a worker backs off from transient failures (Kafka and embedded alike)."""
        return RetryPolicy(
            initial_s=self.retry_initial_seconds,
            max_s=self.retry_max_seconds,
            max_attempts=self.retry_max_attempts,
        )

    def probe_policy(self) -> ProbePolicy:
        """How /readyz and /healthz judge a process's health (runtime.probes)."""
        return ProbePolicy(readiness_grace_s=self.readiness_grace_seconds,
                           heartbeat_timeout_s=self.liveness_heartbeat_seconds)

    def commit_policy(self) -> CommitPolicy:
        """When a worker commits what it has processed (Kafka and embedded alike)."""
        return CommitPolicy(self.commit_every_records, self.commit_every_seconds)


PREFIX = "POLICY_INDEXER_"

# Secrets that can also come from a file named by ``<setting>_file``.
SECRET_FILE_SETTINGS = (
    "kafka_sasl_password", "kafka_key_password", "elasticsearch_password",
    "elasticsearch_api_key",
)
# A secret file is some bytes; a bigger one is the wrong file (a whole bundle).
MAX_SECRET_FILE_BYTES = 64 * 1024


def read_secret_file(path: Path, setting: str) -> str:
    """The secret in ``path``, without the trailing newline editors and ``echo`` add."""
    try:
        if path.stat().st_size > MAX_SECRET_FILE_BYTES:
            raise ValueError(f"{setting} {str(path)!r} is larger than {MAX_SECRET_FILE_BYTES} "
                             "bytes: not a secret file")
        value = path.read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as exc:
        raise ValueError(f"{setting} {str(path)!r} cannot be read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{setting} {str(path)!r} is not UTF-8 text") from exc
    if not value:
        raise ValueError(f"{setting} {str(path)!r} is empty")
    return value


def mask_url(url: str) -> str:
    """``url`` with any user and password inside it replaced by ``***``."""
    parsed = urlsplit(url)
    if parsed.username is None and parsed.password is None:
        return url
    host = parsed.hostname or ""
    if parsed.port is not None:
        host = f"{host}:{parsed.port}"
    return parsed._replace(netloc=f"***@{host}").geturl()


def unknown_settings(environ: Mapping[str, str], dotenv: Path | None = Path(".env")) -> list[str]:
    """``POLICY_INDEXER_*`` names, in the environment or the ``.env`` file, that are no setting.

    Each with the closest known name, so a typo is an error that says what was meant
    instead of a setting silently left at its default.
    """
    from difflib import get_close_matches  # noqa: PLC0415

    from dotenv import dotenv_values  # noqa: PLC0415 - pydantic-settings' own .env reader

    known = {PREFIX + name.upper() for name in Settings.model_fields}
    names = {k for k in environ if k.startswith(PREFIX)}
    if dotenv is not None and dotenv.is_file():
        names |= {k for k in dotenv_values(dotenv) if k.upper().startswith(PREFIX)}
    # deploy/local/services' own variables share the prefix
    names = {n for n in names if not n.upper().startswith(PREFIX + "LOCAL_")}
    problems = []
    for name in sorted(n for n in names if n.upper() not in known):
        close = get_close_matches(name.upper(), known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(f"{name}: not a setting{hint}")
    return problems
