"""The crash hook that the failure tests use to SIGKILL a process at a named step.

Production code calls ``checkpoint(step)`` at the points where a crash is most
interesting (``after-chunk-write``, ``after-state-write``, ...). It does nothing
unless a test entry point (``tests/support/faulty_cli.py``) called
``install("step:n")`` before running the command line: no setting, environment
variable or option of ``policy-indexer`` can switch it on, so a production
process cannot be made to kill itself from its environment.

Worker processes started by the Kafka-mode supervisor inherit the installed spec
explicitly (``installed_spec()`` is passed to the child, which installs it).
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

Checkpoint = Callable[[str], None]

_installed: str | None = None


def _noop(_step: str) -> None:
    return None


def parse(spec: str) -> tuple[str, int]:
    """``"after-state-write:2"`` -> ``("after-state-write", 2)``; a clear error otherwise."""
    step, _, nth = spec.partition(":")
    if not step:
        raise ValueError(f"fault spec {spec!r} names no step ('step:n')")
    try:
        target = int(nth or "1")
    except ValueError as exc:
        raise ValueError(f"fault spec {spec!r}: n={nth!r} is not a whole number") from exc
    if target < 1:
        raise ValueError(f"fault spec {spec!r}: n must be at least 1")
    return step, target


def install(spec: str | None) -> None:
    """Test entry points only: SIGKILL this process the n-th time it reaches ``step``."""
    global _installed  # noqa: PLW0603 - one process-wide hook, set once by a test entry point
    if spec:
        parse(spec)
    _installed = spec or None


def installed_spec() -> str | None:
    return _installed


def checkpoint_for(spec: str | None) -> Checkpoint:
    """A fresh checkpoint function for ``spec`` (counts its own steps); no-op for None."""
    if not spec:
        return _noop
    step, target = parse(spec)
    seen: Counter[str] = Counter()

    def checkpoint(reached: str) -> None:
        seen[reached] += 1
        if reached == step and seen[reached] == target:
            log.warning("test fault hook: SIGKILL", step=step, n=target)
            os.kill(os.getpid(), signal.SIGKILL)

    return checkpoint


def checkpoint() -> Checkpoint:
    """The checkpoint of this process: the installed hook, or a no-op."""
    return checkpoint_for(_installed)
