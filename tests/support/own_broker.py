"""A Kafka broker of a test's own, to stop and start without touching the shared one.

The shared broker on :9092 advertises its own address, so a TCP proxy in front
of it is bypassed after the first metadata request; an outage test therefore
runs ``deploy/local/services`` for one more single-node KRaft broker, on free
ports and in the test's own state folder. ``down`` keeps the folder, so topics
and committed offsets survive a stop and start, as they would in production.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.workers import free_port

SERVICES = Path(__file__).resolve().parents[2] / "deploy" / "local" / "services"


@dataclass(frozen=True)
class OwnBroker:
    """``deploy/local/services`` for one more broker, on its own ports and folder."""

    env: dict[str, str]
    bootstrap: str

    def services(self, command: str) -> None:
        """``up`` (waits until healthy) or ``down`` (stops it, keeps its data)."""
        done = subprocess.run([sys.executable, str(SERVICES), command, "kafka"], env=self.env,
                              capture_output=True, text=True, timeout=180, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"services {command} kafka failed:\n{done.stdout}{done.stderr}")


@contextmanager
def own_broker_under(state_dir: Path) -> Iterator[OwnBroker]:
    """Start a broker whose state lives under ``state_dir``; stop it on the way out.

    Start it after the shared broker answered (the ``kafka_bootstrap`` fixture):
    the Kafka jars are then in the cache and ``up`` takes seconds.
    """
    port = free_port()
    broker = OwnBroker(
        env={
            **os.environ,
            "POLICY_INDEXER_LOCAL_KAFKA_PORT": str(port),
            "POLICY_INDEXER_LOCAL_KAFKA_CONTROLLER_PORT": str(free_port()),
            "POLICY_INDEXER_LOCAL_STATE": str(state_dir),
        },
        bootstrap=f"127.0.0.1:{port}",
    )
    broker.services("up")
    try:
        yield broker
    finally:
        broker.services("down")
