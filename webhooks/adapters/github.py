"""GitHub push webhooks: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>``.

Configure on GitHub (repository -> Settings -> Webhooks): payload URL
``.../webhooks/github``, content type ``application/json``, the secret, "Just
the push event". What is checked, in order:

- ``X-Hub-Signature-256`` against each configured secret (two while rotating),
  in constant time -> 401 (reason missing, malformed, mismatch). The scheme
  has no timestamp, so no replay window: a replayed push publishes the same
  range again, which the version guard makes harmless;
- ``X-GitHub-Event``: ``ping`` -> 202 ``pong``; ``push`` goes on; any other -> 202 ignored;
- the body: JSON (400) with ``ref``, ``after`` and ``repository.full_name`` (422);
- repository (403) and branch (202 ignored), then the Git source (``git_push``).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import uuid
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from transport.publisher import EventPublisher
from webhooks.adapters.base import (
    Ignored,
    Outcome,
    Unauthorized,
    WebhookRequest,
    check_secrets,
    header,
    matches_any,
    parse_json,
    required_header,
)
from webhooks.adapters.git_push import GitPushTarget
from webhooks.adapters.spec import AdapterContext, AdapterSection, AdapterSpec

SIGNATURE_HEADER = "X-Hub-Signature-256"
EVENT_HEADER = "X-GitHub-Event"
_SIGNATURE = re.compile(r"^sha256=([0-9a-f]{64})$")
_SHA = r"^[0-9a-f]{40}$"


class _Repository(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    full_name: str = Field(min_length=1)


class GitHubPush(BaseModel):
    """The fields of a push event this receiver reads (GitHub sends many more)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    ref: str = Field(min_length=1)
    before: str = Field(pattern=_SHA)
    after: str = Field(pattern=_SHA)
    repository: _Repository


def sign(secret: bytes, body: bytes) -> str:
    """The header value GitHub sends for ``body`` (``policy-indexer webhook sign``, tests)."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


class GitHubPushAdapter:
    name = "github"
    media_types = frozenset({"application/json"})

    def __init__(self, secrets: Sequence[bytes], target: GitPushTarget) -> None:
        self._secrets = check_secrets("github webhook", secrets)
        self._target = target

    def authenticate(self, request: WebhookRequest) -> None:
        value = required_header(request, SIGNATURE_HEADER)
        found = _SIGNATURE.match(value.strip())
        if found is None:
            raise Unauthorized(f"{SIGNATURE_HEADER} is not sha256=<64 lowercase hex>",
                               reason="malformed")
        expected = [sign(s, request.body).encode() for s in self._secrets]
        if not matches_any([value.strip().encode()], expected):
            raise Unauthorized(f"{SIGNATURE_HEADER} matches no configured secret",
                               reason="mismatch")

    def handle(self, request: WebhookRequest, publisher: EventPublisher) -> Outcome:
        event = header(request, EVENT_HEADER)
        if event == "ping":
            return Ignored("pong")
        if event != "push":
            return Ignored(f"{EVENT_HEADER}={event!r} is not a push; only pushes are indexed")
        push = parse_json(GitHubPush, request.body)
        return self._target.apply(push.repository.full_name, push.ref, push.after, publisher)


def _from_settings(section: AdapterSection, context: AdapterContext) -> GitHubPushAdapter:
    target = context.git_target()  # a missing Git source is said before a bad secret
    return GitHubPushAdapter(section.utf8("secrets"), target)


def _signed_headers(secret: str, body: bytes, event: str, now: float) -> dict[str, str]:
    return {SIGNATURE_HEADER: sign(secret.encode(), body), EVENT_HEADER: event,
            "X-GitHub-Delivery": str(uuid.uuid4())}


SPEC = AdapterSpec("github", "secrets", _from_settings, sign=_signed_headers)
