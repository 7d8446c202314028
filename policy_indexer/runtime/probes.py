"""What ``/readyz`` and ``/healthz`` answer, decided in one place from a process's health.

A process hands its ``health`` function (a body ``{"status": ..., ...}``) and, when it
has a loop that turns, its heartbeat to ``Probes``; the metrics server asks it for
each probe. The rules:

- readiness (``/readyz``): 200 while the status is ``ok``. ``starting`` (never ready
  yet) and ``stopping`` (draining on SIGTERM) are 503 at once. Any other status
  (``retrying``: a worker backing off from Elasticsearch or Kafka; ``failing``: the
  monitor's or the folder watcher's passes failing) stays 200 for
  ``readiness_grace_s`` after the probe first saw it, with the status, the reason
  and ``not_ok_for_s`` in the body, then 503: a blip of a dependency does not make
  every pod NotReady, a process that cannot do its work for longer does.
- liveness (``/healthz``): 503 when a part says ``failed`` (it cannot go on: a
  restart may help), or when the loop's last turn is older than
  ``heartbeat_timeout_s`` (a stuck loop: a hung call, a deadlock). Before the loop's
  first turn (still connecting at start) there is no heartbeat to judge, and backing
  off turns the loop too, so neither a slow start nor a long retry is restarted.

The time the status went bad is taken from the probes themselves, so the grace is
measured to within one probe period. ``clock`` is monotonic seconds, injected in tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Health = Callable[[], dict[str, Any]]
Heartbeat = Callable[[], float | None]
# The statuses for which liveness fails (the orchestrator restarts the process).
LIVENESS_FAILURES = frozenset({"failed"})
# Not ready at once, whatever the grace: not started yet, or draining.
NOT_READY_AT_ONCE = frozenset({"starting", "stopping"}) | LIVENESS_FAILURES


@dataclass(frozen=True)
class ProbePolicy:
    """``readiness_grace_s``: how long a status other than ``ok`` stays ready (0: not at
    all). ``heartbeat_timeout_s``: the age of the last loop turn that fails liveness
    (None: the heartbeat is not judged)."""

    readiness_grace_s: float = 0.0
    heartbeat_timeout_s: float | None = None


def no_heartbeat() -> float | None:
    return None


class Probes:
    """Readiness with a grace and liveness on a heartbeat; thread-safe (one per server)."""

    def __init__(self, health: Health, policy: ProbePolicy | None = None, *,
                 heartbeat: Heartbeat = no_heartbeat,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.health = health
        self.policy = policy or ProbePolicy()
        self.heartbeat = heartbeat
        self.clock = clock
        self._lock = threading.Lock()
        self._not_ok_since: float | None = None

    def readiness(self) -> tuple[int, dict[str, Any]]:
        body = self.health()
        status = body.get("status")
        now = self.clock()
        with self._lock:
            if status == "ok":
                self._not_ok_since = None
                return 200, body
            if self._not_ok_since is None:
                self._not_ok_since = now
            not_ok_for = now - self._not_ok_since
        if status in NOT_READY_AT_ONCE:
            return 503, body
        grace = self.policy.readiness_grace_s
        body["not_ok_for_s"] = round(not_ok_for, 1)
        body["readiness_grace_s"] = grace
        return (200 if not_ok_for < grace else 503), body

    def liveness(self) -> tuple[int, dict[str, Any]]:
        body = self.health()
        if body.get("status") in LIVENESS_FAILURES:
            return 503, body
        timeout = self.policy.heartbeat_timeout_s
        beat = self.heartbeat()
        if timeout is None or beat is None:
            return 200, body
        age = self.clock() - beat
        body["heartbeat_age_s"] = round(age, 1)
        if age > timeout:
            body["status"] = "stuck"
            body["last_error"] = (f"the loop has not turned for {age:.0f} s "
                                  f"(more than {timeout:g} s)")
            return 503, body
        return 200, body
