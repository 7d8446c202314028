"""GitLab push webhooks: ``X-Gitlab-Token: <secret token>``.

Configure on GitLab (project -> Settings -> Webhooks): URL
``.../webhooks/gitlab``, the secret token, trigger "Push events" (a branch
filter is fine). GitLab sends the token itself, not a signature of the body,
so the check is a constant-time comparison with each configured token (two
while rotating) -> 401 (missing, mismatch); the scheme has no timestamp and
no replay window (a replay publishes the same range again: harmless). Then:

- ``X-Gitlab-Event``: ``Push Hook`` goes on; any other (``Tag Push Hook``...) -> 202 ignored;
- the body: JSON (400) with ``object_kind: push``, ``ref``, ``after`` and
  ``project.path_with_namespace`` (422);
- repository (403) and branch (202 ignored), then the Git source (``git_push``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

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

TOKEN_HEADER = "X-Gitlab-Token"  # noqa: S105 (a header name)
EVENT_HEADER = "X-Gitlab-Event"
_SHA = r"^[0-9a-f]{40}$"


class _Project(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    path_with_namespace: str = Field(min_length=1)


class GitLabPush(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    object_kind: Literal["push"]
    ref: str = Field(min_length=1)
    before: str = Field(pattern=_SHA)
    after: str = Field(pattern=_SHA)
    project: _Project


class GitLabPushAdapter:
    name = "gitlab"
    media_types = frozenset({"application/json"})

    def __init__(self, tokens: Sequence[bytes], target: GitPushTarget) -> None:
        self._tokens = check_secrets("gitlab webhook", tokens)
        self._target = target

    def authenticate(self, request: WebhookRequest) -> None:
        token = required_header(request, TOKEN_HEADER)
        if not matches_any([token.encode("utf-8")], self._tokens):
            raise Unauthorized(f"{TOKEN_HEADER} matches no configured token", reason="mismatch")

    def handle(self, request: WebhookRequest, publisher: EventPublisher) -> Outcome:
        event = header(request, EVENT_HEADER)
        if event != "Push Hook":
            return Ignored(f"{EVENT_HEADER}={event!r} is not a push; only pushes are indexed")
        push = parse_json(GitLabPush, request.body)
        return self._target.apply(push.project.path_with_namespace, push.ref, push.after,
                                  publisher)


def _from_settings(section: AdapterSection, context: AdapterContext) -> GitLabPushAdapter:
    target = context.git_target()  # a missing Git source is said before a bad token
    return GitLabPushAdapter(section.utf8("tokens"), target)


def _signed_headers(secret: str, body: bytes, event: str, now: float) -> dict[str, str]:
    return {TOKEN_HEADER: secret, EVENT_HEADER: "Push Hook" if event == "push" else event}


SPEC = AdapterSpec("gitlab", "tokens", _from_settings, sign=_signed_headers)
