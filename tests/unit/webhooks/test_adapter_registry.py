"""Adapters are declared once: each module's ``SPEC`` in ``registry.ADAPTERS``, and every
place that names adapters (routes, on/off, adapters built, the missing-secrets message,
``webhook sign``'s schemes) derived from that list, so a second registry cannot come back."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field, SecretStr

import webhooks.adapters
from policy_indexer.commands import webhook as webhook_command
from policy_indexer.runtime.webhook import (
    WebhookNotConfigured,
    missing_secrets_message,
    webhook_adapters,
    webhook_enabled,
    webhook_routes,
)
from policy_indexer.settings import Settings
from transport.publisher import EventPublisher
from webhooks.adapters.base import Ignored, Outcome, WebhookRequest
from webhooks.adapters.registry import ADAPTERS
from webhooks.adapters.spec import AdapterContext, AdapterSection, AdapterSpec

ROOT = Path(__file__).resolve().parents[3]


class FakeSettings(Settings):
    """Settings with one more adapter's section, as a new adapter would add."""

    webhook_fake_secrets: list[SecretStr] = Field(default_factory=list)
    webhook_fake_colour: str = "blue"


class FakeAdapter:
    name = "fake"
    media_types = frozenset({"application/json"})

    def __init__(self, section: AdapterSection, context: AdapterContext) -> None:
        if section["colour"] == "red":
            raise ValueError(f"{section.env('colour')}: red is not a colour for webhooks")
        self.section = section
        self.context = context

    def authenticate(self, request: WebhookRequest) -> None:
        return None

    def handle(self, request: WebhookRequest, publisher: EventPublisher) -> Outcome:
        return Ignored("fake")


FAKE = AdapterSpec("fake", "secrets", FakeAdapter)


def fake_settings(**values: Any) -> FakeSettings:
    return FakeSettings(_env_file=None, **values)


def test_a_spec_in_a_test_only_registry_is_all_an_adapter_needs() -> None:
    off = fake_settings()
    assert not webhook_enabled(off, (FAKE,))
    assert webhook_routes(off, (FAKE,)) == []
    assert webhook_adapters(off, (FAKE,)) == []

    on = fake_settings(webhook_fake_secrets=["fake-secret-000000001"],
                       webhook_timestamp_tolerance_seconds=42)
    assert webhook_enabled(on, (FAKE,))
    assert webhook_routes(on, (FAKE,)) == ["/webhooks/fake"]
    [adapter] = webhook_adapters(on, (FAKE,))
    assert isinstance(adapter, FakeAdapter)
    assert dict(adapter.section.values) == {
        "secrets": on.webhook_fake_secrets, "colour": "blue"}
    assert adapter.section.plain("secrets") == ["fake-secret-000000001"]
    assert adapter.context.tolerance_seconds == 42
    assert missing_secrets_message((FAKE,)).endswith(
        "or an adapter's: POLICY_INDEXER_WEBHOOK_FAKE_SECRETS")


def test_a_fake_adapters_bad_setting_is_named() -> None:
    bad = fake_settings(webhook_fake_secrets=["fake-secret-000000001"],
                        webhook_fake_colour="red")
    with pytest.raises(WebhookNotConfigured, match="POLICY_INDEXER_WEBHOOK_FAKE_COLOUR: red"):
        webhook_adapters(bad, (FAKE,))


def test_every_adapter_modules_spec_is_in_the_one_list() -> None:
    declared = []
    for module in pkgutil.iter_modules(webhooks.adapters.__path__):
        spec = getattr(importlib.import_module(f"webhooks.adapters.{module.name}"), "SPEC", None)
        if spec is not None:
            assert isinstance(spec, AdapterSpec)
            assert spec.name == module.name, "the module is named after its route"
            declared.append(spec)
    assert sorted(declared, key=lambda s: s.name) == sorted(ADAPTERS, key=lambda s: s.name)
    assert len({spec.name for spec in ADAPTERS}) == len(ADAPTERS)


def test_every_adapters_settings_exist_and_every_adapter_setting_has_a_spec() -> None:
    fields = set(Settings.model_fields)
    for spec in ADAPTERS:
        assert spec.secrets_setting in fields, spec
    switches = {f for f in fields if re.fullmatch(r"webhook_[a-z]+_(secrets|tokens)", f)}
    assert switches == {spec.secrets_setting for spec in ADAPTERS}


def test_the_derived_places_read_the_registry() -> None:
    assert missing_secrets_message() == missing_secrets_message(ADAPTERS)
    for spec in ADAPTERS:
        assert f"POLICY_INDEXER_{spec.secrets_setting.upper()}" in missing_secrets_message()
    signed = tuple(spec.name for spec in ADAPTERS if spec.sign is not None)
    schemes = webhook_command.SCHEMES
    assert schemes == ("cms", *signed)


def test_no_other_module_names_an_adapter() -> None:
    """Only the adapter's module, the registry and the settings name it: a list of
    adapter names or settings written anywhere else would be a second registry."""
    allowed = {f"webhooks/adapters/{spec.name}.py" for spec in ADAPTERS} | {
        "webhooks/adapters/registry.py", "policy_indexer/settings/adapters.py"}
    found = []
    for package in ("policy_indexer", "webhooks"):
        for path in sorted((ROOT / package).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            if where in allowed:
                continue
            text = path.read_text(encoding="utf-8")
            for spec in ADAPTERS:
                if re.search(rf"""["']{spec.name}["']|webhook_{spec.name}_""", text):
                    found.append(f"{where}: {spec.name}")
    assert found == []
