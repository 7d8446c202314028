"""What an adapter module declares once: its name, its settings section, its factory.

Each adapter module ends with ``SPEC = AdapterSpec(...)``, and
``webhooks.adapters.registry.ADAPTERS`` lists every ``SPEC``. Everything that
names adapters reads that one tuple: the receiver's adapters and routes,
whether the webhook part is on and the missing-secrets message
(``policy_indexer/runtime/webhook.py``), and the schemes ``webhook sign`` signs.

The settings section of adapter ``<name>`` is every setting called
``webhook_<name>_*`` (in the environment ``POLICY_INDEXER_WEBHOOK_<NAME>_*``);
the adapter is on when ``webhook_<name>_<secrets_key>`` is set. This package
does not read settings (it sits below ``policy_indexer``): the runtime hands
the factory its section as plain values and an ``AdapterContext`` with what
adapters share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from webhooks.adapters.base import Adapter
from webhooks.adapters.git_push import GitPushTarget

# (secret, body, event, now) -> headers; a ValueError names a secret that cannot sign
Signer = Callable[[str, bytes, str, float], dict[str, str]]


@dataclass(frozen=True)
class AdapterSection:
    """One adapter's settings, keyed without the ``webhook_<name>_`` prefix."""

    values: Mapping[str, Any]
    env_prefix: str  # e.g. "POLICY_INDEXER_WEBHOOK_SANITY_", for messages that name a setting

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def env(self, key: str) -> str:
        """The environment name of ``key``, as an error message should name it."""
        return f"{self.env_prefix}{key.upper()}"

    def plain(self, key: str) -> list[str]:
        """The secrets under ``key`` as text."""
        secrets: list[SecretStr] = self.values[key]
        return [s.get_secret_value() for s in secrets]

    def utf8(self, key: str) -> tuple[bytes, ...]:
        """The secrets under ``key`` as UTF-8 bytes."""
        return tuple(s.encode("utf-8") for s in self.plain(key))

    def secret(self, key: str) -> str | None:
        value: SecretStr | None = self.values[key]
        return value.get_secret_value() if value is not None else None


@dataclass(frozen=True)
class AdapterContext:
    """What every factory may use besides its own section."""

    tolerance_seconds: float  # how old a signed timestamp may be
    api_timeout_seconds: float  # a read of a CMS's API gives up after this
    git_target: Callable[[], GitPushTarget]  # the Git source pushes go to; built on first call


@dataclass(frozen=True)
class AdapterSpec:
    """An adapter declared once: its route is ``/webhooks/<name>``."""

    name: str
    secrets_key: str  # "secrets" or "tokens": the setting that turns the adapter on
    factory: Callable[[AdapterSection, AdapterContext], Adapter]
    # The headers a sender of this scheme adds to ``body``, signed with ``secret``
    # (``policy-indexer webhook sign|send``); None: the command cannot sign for it.
    sign: Signer | None = None

    @property
    def route(self) -> str:
        return f"/webhooks/{self.name}"

    @property
    def settings_prefix(self) -> str:
        return f"webhook_{self.name}_"

    @property
    def secrets_setting(self) -> str:
        return f"{self.settings_prefix}{self.secrets_key}"
