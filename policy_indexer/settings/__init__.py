"""The one place configuration is read.

Every setting comes from the environment with the prefix ``POLICY_INDEXER_``
(``POLICY_INDEXER_KAFKA_BOOTSTRAP_SERVERS=...``) or from a ``.env`` file, and
can be handed a plain dict in tests: ``Settings(**{"kafka_topic": "t"})``.
Core packages never read settings; the command line passes values down.

``Settings`` is composed of one section per component, a module each, each a
plain pydantic model holding its fields, its validators and the builder that
turns them into the component's config object (``commit_policy()``,
``http_limits()``, ...). The names are the flat ``settings.<field>`` and
``POLICY_INDEXER_<FIELD>`` of every section; a default the component also
has is taken from the component's constant, written once.

| module | section |
|---|---|
| ``process`` | pipeline, logs, /metrics, probes (``probe_policy()``), secrets dir, model cache |
| ``servers`` | the HTTP limits of the webhook and search servers (``http_limits()``) |
| ``kafka`` | brokers, topics, connection security |
| ``elasticsearch`` | nodes (``elasticsearch_nodes()``), credentials, indices, bulk writes |
| ``worker`` | worker processes, ``commit_policy()``, ``retry_policy()``, unexpected errors |
| ``webhook`` | the webhook receiver |
| ``adapters`` | the CMS adapters (GitHub, GitLab, Standard Webhooks, Contentful, Sanity, Strapi) |
| ``sources`` | the source and the folder source's hardening |
| ``monitor`` | the freshness monitor and the alert bounds |
| ``reindex`` | the nightly reconcile, the sweep, the scheduler |
| ``watcher`` | the folder watcher |
| ``embedded`` | the embedded mode's files and queue lease |
| ``search`` | search_policy: server, keys, dense views, threshold, reranker, run log |
| ``embeddings`` | the vector backfill |
| ``secret_files`` | the secret-file rule below, and ``mask_url`` |

The secret-file rule. A secret X with a file form (``SECRET_FILE_SETTINGS``:
the Kafka SASL and key passwords, the Elasticsearch password and API key, the
search API keys) is given either inline, ``POLICY_INDEXER_X``, or as a file,
``POLICY_INDEXER_X_FILE`` (a mounted secret); both at once are refused ("set x
or x_file, not both"). The file is read once, when the settings load, into X
(so every reader sees X): UTF-8, at most ``MAX_SECRET_FILE_BYTES``, without
the trailing newline, never empty; one that breaks this stops every command
at start, naming the ``_FILE`` setting. ``POLICY_INDEXER_SECRETS_DIR`` (a
directory of files named as the variables) is pydantic-settings' own source
of any setting, below the environment and ``.env``: a variable also set there
wins over its file, and the file's content is stripped of surrounding
whitespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from policy_indexer.settings.adapters import AdapterSettings
from policy_indexer.settings.elasticsearch import ElasticsearchSettings
from policy_indexer.settings.embedded import EmbeddedSettings
from policy_indexer.settings.embeddings import EmbeddingsSettings
from policy_indexer.settings.kafka import KafkaSettings
from policy_indexer.settings.monitor import MonitorSettings
from policy_indexer.settings.process import ProcessSettings
from policy_indexer.settings.reindex import ReindexSettings
from policy_indexer.settings.search import SearchSettings
from policy_indexer.settings.secret_files import (
    MAX_SECRET_FILE_BYTES,
    SECRET_FILE_SETTINGS,
    mask_url,
    read_secret_file,
    with_secret_files,
)
from policy_indexer.settings.servers import ServerSettings
from policy_indexer.settings.sources import SourceSettings
from policy_indexer.settings.watcher import WatcherSettings
from policy_indexer.settings.webhook import WebhookSettings
from policy_indexer.settings.worker import WorkerSettings

__all__ = [
    "MAX_SECRET_FILE_BYTES", "PREFIX", "SECRET_FILE_SETTINGS", "Settings", "mask_url",
    "read_secret_file", "unknown_settings",
]

PREFIX = "POLICY_INDEXER_"


# pydantic lays the fields out from the last base to the first: listed backwards here,
# they come in the order of the table above (``config`` sorts them, ``doctor`` does not).
class Settings(
    EmbeddingsSettings, SearchSettings, EmbeddedSettings, WatcherSettings, ReindexSettings,
    MonitorSettings, SourceSettings, AdapterSettings, WebhookSettings, WorkerSettings,
    ElasticsearchSettings, KafkaSettings, ServerSettings, ProcessSettings, BaseSettings,
):
    """Typed configuration of every policy-indexer process: every section's fields."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX,
        env_file=".env",
        env_file_encoding="utf-8",
        # Keys of other tools in a shared .env are not ours and must not crash every
        # command; our own prefix with an unknown name is refused by ``unknown_settings``.
        extra="ignore",
        frozen=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _secret_files(cls, data: Any) -> Any:
        """``X_FILE`` settings: the secret X read from that file (a mounted secret)."""
        return with_secret_files(data)


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
