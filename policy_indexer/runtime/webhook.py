"""The webhook receiver built from settings: its config, its adapters, its app, its process."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import structlog
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from starlette.applications import Starlette

from policy_indexer.runtime.backends import Backends, backends_class
from policy_indexer.runtime.http import process_registry
from policy_indexer.runtime.runner import Running, run_parts
from policy_indexer.runtime.servers import UvicornThread
from policy_indexer.runtime.sources import open_configured_source, open_git_source
from policy_indexer.settings import Settings
from sources.folder import MarkdownFolderSource
from transport.publisher import EventPublisher
from webhooks.adapters.base import Adapter
from webhooks.adapters.endpoint import EndpointLimits
from webhooks.adapters.git_push import GitPushTarget
from webhooks.adapters.registry import ADAPTERS
from webhooks.adapters.spec import AdapterContext, AdapterSection, AdapterSpec
from webhooks.app import CMS_ROUTE, create_app
from webhooks.config import WebhookConfig
from webhooks.owners import IndexAndFolderOwners, OwnerLookup, StateReader

log = structlog.get_logger(__name__)


def setting_env(field: str) -> str:
    """The environment name of a ``Settings`` field."""
    return f"{Settings.model_config.get('env_prefix', '')}{field.upper()}"


def missing_secrets_message(specs: Sequence[AdapterSpec] = ADAPTERS) -> str:
    """What to set when no route has its secret: our scheme's, or any adapter's."""
    return ("no webhook secret configured: set POLICY_INDEXER_WEBHOOK_SECRETS='[\"<secret>\"]' "
            "(POST /webhooks/cms) or an adapter's: "
            + ", ".join(setting_env(spec.secrets_setting) for spec in specs))


MISSING_SECRETS_MESSAGE = missing_secrets_message()


class WebhookNotConfigured(ValueError):
    """No secret, or a secret that cannot be used; the message says which setting."""


def configured_adapters(settings: Settings,
                        specs: Sequence[AdapterSpec] = ADAPTERS) -> list[AdapterSpec]:
    """The adapters whose secrets are set, in the registry's order."""
    return [spec for spec in specs if getattr(settings, spec.secrets_setting)]


def webhook_enabled(settings: Settings, specs: Sequence[AdapterSpec] = ADAPTERS) -> bool:
    """Is any route of the receiver configured (each needs its secret)?"""
    return bool(settings.webhook_secrets or configured_adapters(settings, specs))


def webhook_config(settings: Settings) -> WebhookConfig:
    """Our scheme's receiver; its 503 names the mode's queue (``Backends.queue_name``)."""
    if not settings.webhook_secrets:
        raise WebhookNotConfigured(MISSING_SECRETS_MESSAGE)
    try:
        return WebhookConfig(
            secrets=_utf8(settings.webhook_secrets),
            timestamp_tolerance_seconds=settings.webhook_timestamp_tolerance_seconds,
            max_body_bytes=settings.webhook_max_body_bytes,
            retry_after_seconds=settings.webhook_retry_after_seconds,
            queue_name=backends_class(settings).queue_name,
        )
    except ValueError as exc:
        raise WebhookNotConfigured(str(exc)) from exc


def adapter_section(settings: Settings, spec: AdapterSpec) -> AdapterSection:
    """The adapter's ``webhook_<name>_*`` settings, as plain values keyed without the prefix."""
    prefix = spec.settings_prefix
    values = {field.removeprefix(prefix): getattr(settings, field)
              for field in type(settings).model_fields if field.startswith(prefix)}
    return AdapterSection(values, env_prefix=setting_env(prefix))


def webhook_adapters(settings: Settings,
                     specs: Sequence[AdapterSpec] = ADAPTERS) -> list[Adapter]:
    """The adapters whose secrets are set; raises ``WebhookNotConfigured`` naming the setting."""
    context = AdapterContext(
        tolerance_seconds=settings.webhook_timestamp_tolerance_seconds,
        api_timeout_seconds=settings.webhook_cms_api_timeout_seconds,
        git_target=functools.cache(lambda: _git_target(settings)))
    try:
        return [spec.factory(adapter_section(settings, spec), context)
                for spec in configured_adapters(settings, specs)]
    except ValueError as exc:
        raise WebhookNotConfigured(str(exc)) from exc


def webhook_routes(settings: Settings, specs: Sequence[AdapterSpec] = ADAPTERS) -> list[str]:
    """The POST routes the receiver serves with these settings."""
    routes = [CMS_ROUTE] if settings.webhook_secrets else []
    return routes + [spec.route for spec in configured_adapters(settings, specs)]


def _git_target(settings: Settings) -> GitPushTarget:
    source = open_git_source(settings)
    if source is None:
        raise WebhookNotConfigured(
            "GitHub/GitLab push webhooks need the Git source: set POLICY_INDEXER_SOURCE_KIND=git, "
            "POLICY_INDEXER_SOURCE_URL=<remote> and POLICY_INDEXER_SOURCE_PATH=<mirror folder>")
    if not settings.git_repository:
        raise WebhookNotConfigured(
            "GitHub/GitLab push webhooks need POLICY_INDEXER_GIT_REPOSITORY (owner/name) to "
            "accept pushes of that repository only")
    return GitPushTarget(settings.git_repository, settings.git_branch, source)


def _utf8(secrets: list[SecretStr]) -> tuple[bytes, ...]:
    return tuple(s.get_secret_value().encode("utf-8") for s in secrets)


def owner_lookup(settings: Settings, states: StateReader) -> OwnerLookup:
    """Who owns an id: the index's state, else the configured folder (if the source is one)."""
    folder_holds = None
    if settings.source_kind == "folder" and settings.source_path is not None:
        source = open_configured_source(settings)
        if isinstance(source, MarkdownFolderSource):  # open_source builds one for "folder"
            folder_holds = source.holds
    return IndexAndFolderOwners(states, folder_holds)


def webhook_app(
    settings: Settings, publisher: EventPublisher, registry: CollectorRegistry,
    *, states: StateReader | None = None,
) -> Starlette:
    """``states``: the index's document states, for the owner check (409); None: no check."""
    if not webhook_enabled(settings):
        raise WebhookNotConfigured(MISSING_SECRETS_MESSAGE)
    config = webhook_config(settings) if settings.webhook_secrets else None
    limits = EndpointLimits(max_body_bytes=settings.webhook_max_body_bytes,
                            retry_after_seconds=settings.webhook_retry_after_seconds)
    owners = owner_lookup(settings, states) if states is not None else None
    return create_app(config, publisher, registry, adapters=webhook_adapters(settings),
                      adapter_limits=limits, owners=owners)


def webhook_part(settings: Settings, backends: Backends,
                 registry: CollectorRegistry) -> UvicornThread:
    """The receiver as a part, publishing into the mode's queue (Kafka, or the local queue
    a running ``policy-indexer run`` drains); the owner check reads the index's states.

    Raises ``WebhookNotConfigured`` without a route's secret, ``PartError`` when its port
    is taken. Its publisher closes after the server stops.
    """
    publisher = backends.publisher()
    try:
        app = webhook_app(settings, publisher, registry, states=backends.store)
        return UvicornThread("webhook receiver", app, settings.webhook_host,
                             settings.webhook_port, "POLICY_INDEXER_WEBHOOK_PORT",
                             limits=settings.http_limits(), after_stop=publisher.close)
    except BaseException:
        publisher.close()
        raise


def serve_webhook(settings: Settings) -> None:
    """``policy-indexer webhook``: the receiver alone, until SIGTERM/SIGINT.

    Kafka may be down at start: the receiver still starts, answers 503 with
    Retry-After and ``/readyz`` 503 until it can reach the broker. Its probes and
    ``/metrics`` are on its own port (no probe server of its own).
    """

    def started(running: Running) -> None:
        (server,) = running.parts
        assert isinstance(server, UvicornThread)
        log.info("webhook receiver started", url=server.url, routes=webhook_routes(settings),
                 mode=running.backends.mode, topic=settings.kafka_topic)

    run_parts(settings, [webhook_part], registry=process_registry(), probes=None,
              on_started=started)
    log.info("webhook receiver stopped")
