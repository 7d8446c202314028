"""A Kafka broker of a test's own, to stop and start without touching the shared one.

The shared broker on :9092 advertises its own address, so a TCP proxy in front
of it is bypassed after the first metadata request; an outage test therefore
runs ``deploy/local/services`` for one more single-node KRaft broker, on free
ports and in the test's own state folder. ``down`` keeps the folder, so topics
and committed offsets survive a stop and start, as they would in production.

``secured_broker_under`` adds a SASL_SSL listener (SCRAM-SHA-512, a server
certificate from a CA made in the test) beside the PLAINTEXT one that the
runner's health probe and the broker's own replication keep using.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from support.tls_ca import CertificateAuthority
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
def own_broker_under(state_dir: Path, **extra_env: str) -> Iterator[OwnBroker]:
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
            **extra_env,
        },
        bootstrap=f"127.0.0.1:{port}",
    )
    broker.services("up")
    try:
        yield broker
    finally:
        broker.services("down")


SCRAM_USER = "indexer"
SCRAM_MECHANISM = "SCRAM-SHA-512"


@dataclass(frozen=True)
class SecuredBroker:
    """A broker with a SASL_SSL listener: where it is and the credentials it accepts."""

    broker: OwnBroker
    bootstrap: str  # the SASL_SSL listener (SCRAM-SHA-512)
    plaintext_bootstrap: str  # the PLAINTEXT listener (health probe, replication)
    sasl_plain_bootstrap: str  # a SASL_PLAINTEXT listener with PLAIN (Confluent Cloud's kind)
    ca: CertificateAuthority
    username: str
    password: str = field(repr=False)

    def settings_env(self) -> dict[str, str]:
        """The ``POLICY_INDEXER_*`` variables a process needs to use this broker."""
        return {
            "POLICY_INDEXER_KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
            "POLICY_INDEXER_KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
            "POLICY_INDEXER_KAFKA_SASL_MECHANISM": SCRAM_MECHANISM,
            "POLICY_INDEXER_KAFKA_SASL_USERNAME": self.username,
            "POLICY_INDEXER_KAFKA_SASL_PASSWORD": self.password,
            "POLICY_INDEXER_KAFKA_CA_FILE": str(self.ca.ca_file),
        }


@contextmanager
def secured_broker_under(state_dir: Path, password: str) -> Iterator[SecuredBroker]:
    """A broker of the test's own with a SASL_SSL listener (SCRAM-SHA-512) on a free port,
    and a SASL_PLAINTEXT one with PLAIN, for the same user and password.

    The CA and the broker's certificate (for 127.0.0.1 and localhost) are made
    under ``state_dir``; Kafka reads them as PEM (``ssl.keystore.type=PEM``).
    """
    ca = CertificateAuthority.create(state_dir / "tls", "broker")
    # Unencrypted: Java 17 cannot read a PBES2-encrypted PKCS#8 key (what
    # ``cryptography`` writes), and the file lives in the test's own folder.
    server = ca.issue_server("broker")
    secure_port = free_port()
    sasl_plain_port = free_port()
    plain_port = free_port()
    controller_port = free_port()
    host = "127.0.0.1"
    extra = state_dir / "secure-listener.properties"
    extra.write_text("\n".join([
        f"listeners=PLAINTEXT://{host}:{plain_port},CONTROLLER://{host}:{controller_port},"
        f"SECURE://{host}:{secure_port},SASLPLAIN://{host}:{sasl_plain_port}",
        f"advertised.listeners=PLAINTEXT://{host}:{plain_port},SECURE://{host}:{secure_port},"
        f"SASLPLAIN://{host}:{sasl_plain_port}",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
        "SECURE:SASL_SSL,SASLPLAIN:SASL_PLAINTEXT",
        f"listener.name.secure.sasl.enabled.mechanisms={SCRAM_MECHANISM}",
        "listener.name.secure.scram-sha-512.sasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "listener.name.saslplain.sasl.enabled.mechanisms=PLAIN",
        "listener.name.saslplain.plain.sasl.jaas.config="
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_{SCRAM_USER}="{password}";',
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={server.keystore_file}",
        "ssl.client.auth=none",
        "",
    ]))
    env = {
        "POLICY_INDEXER_LOCAL_KAFKA_PORT": str(plain_port),
        "POLICY_INDEXER_LOCAL_KAFKA_CONTROLLER_PORT": str(controller_port),
        "POLICY_INDEXER_LOCAL_STATE": str(state_dir),
        "POLICY_INDEXER_LOCAL_KAFKA_EXTRA_PROPERTIES": str(extra),
        "POLICY_INDEXER_LOCAL_KAFKA_SCRAM":
            f"{SCRAM_MECHANISM}=[name={SCRAM_USER},password={password}]",
    }
    broker = OwnBroker(env={**os.environ, **env}, bootstrap=f"{host}:{plain_port}")
    broker.services("up")
    try:
        yield SecuredBroker(broker, f"{host}:{secure_port}", broker.bootstrap,
                            f"{host}:{sasl_plain_port}", ca, SCRAM_USER, password)
    finally:
        broker.services("down")
