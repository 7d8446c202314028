"""What a GitHub and a GitLab push share: the target check, then the Git source publishes.

A push is accepted for one repository and one branch. Another repository
is a misconfigured hook (403: nothing of it is ours to index); another
branch, a tag or a branch deletion is a valid push that changes nothing
here (202 ignored, so the CMS does not report failures for every branch).
For the configured branch, the Git source fetches (so the mirror has the
commits before anything is published), publishes the changes since the last
published head up to the fetched head, and only then records that head.
"""

from __future__ import annotations

from dataclasses import dataclass

from sources.errors import SourceDataError, SourceUnavailableError
from sources.git import GitSource
from transport.publisher import EventPublisher
from webhooks.adapters.base import Accepted, Ignored, NotThisLibrary, Outcome, SourceUnavailable

ZERO_SHA = "0" * 40


@dataclass(frozen=True)
class GitPushTarget:
    repository: str  # GitHub "owner/name", GitLab "group/project" (path_with_namespace)
    branch: str
    source: GitSource

    def apply(self, repository: str, ref: str, after: str,
              publisher: EventPublisher) -> Outcome:
        if repository.lower() != self.repository.lower():
            raise NotThisLibrary(
                f"repository {repository!r} is not the configured one ({self.repository!r})",
                reason="repository")
        if ref != f"refs/heads/{self.branch}":
            return Ignored(f"ref {ref!r} is not the configured branch {self.branch!r}")
        if after == ZERO_SHA:
            return Ignored(f"branch {self.branch!r} was deleted; the index keeps its library")
        try:
            pending = self.source.publish_pending(publisher, wanted=after)
        except (SourceUnavailableError, SourceDataError) as exc:
            raise SourceUnavailable(str(exc), reason="git") from exc
        return Accepted(tuple(pending.events), {"head": pending.head, "forced": pending.forced})
