"""How every Kafka client of the project reaches the brokers: ``KafkaConnection``.

One frozen value per process (``policy_indexer.runtime.connections.kafka_connection``
maps the settings to it): the brokers, the security protocol (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL), SASL PLAIN or SCRAM credentials, a CA and an optional
client certificate. ``client_options()`` is its kafka-python form, given to every
producer, consumer and admin client. A plain ``"host:port,..."`` string is
accepted wherever a connection is, as a PLAINTEXT connection (``as_connection``):
that keeps tests and local call sites short.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
MASK = "**********"


def broker_list(bootstrap_servers: str) -> list[str]:
    """``"a:9092, b:9092"`` as a list; a value naming no broker is refused by name."""
    servers = [s.strip() for s in bootstrap_servers.split(",") if s.strip()]
    if not servers:
        raise ValueError(f"bootstrap_servers={bootstrap_servers!r} names no broker")
    return servers


@dataclass(frozen=True)
class KafkaConnection:
    """How every client reaches the brokers; refuses a combination that cannot work.

    The password and the key password never appear in ``repr`` or ``str``.
    """

    bootstrap_servers: str
    security_protocol: SecurityProtocol = "PLAINTEXT"
    sasl_mechanism: SaslMechanism | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True

    def __post_init__(self) -> None:
        broker_list(self.bootstrap_servers)
        if self.security_protocol not in get_args(SecurityProtocol):
            raise ValueError(f"security_protocol={self.security_protocol!r} is not one of "
                             f"{', '.join(get_args(SecurityProtocol))}")
        if self.sasl:
            if self.sasl_mechanism not in get_args(SaslMechanism):
                raise ValueError(f"sasl_mechanism={self.sasl_mechanism!r} is not one of "
                                 f"{', '.join(get_args(SaslMechanism))} "
                                 f"(security_protocol={self.security_protocol})")
            if not self.sasl_username or not self.sasl_password:
                raise ValueError(f"security_protocol={self.security_protocol} needs "
                                 "sasl_username and sasl_password")
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")

    @property
    def sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    def servers(self) -> list[str]:
        return broker_list(self.bootstrap_servers)

    def client_options(self) -> dict[str, Any]:
        """The kafka-python keyword arguments every producer, consumer and admin gets.

        Only what the protocol uses is passed (``unused()`` names the rest, which
        kafka-python would otherwise ignore without a word).
        """
        options: dict[str, Any] = {
            "bootstrap_servers": self.servers(),
            "security_protocol": self.security_protocol,
        }
        if self.sasl:
            options.update(sasl_mechanism=self.sasl_mechanism,
                           sasl_plain_username=self.sasl_username,
                           sasl_plain_password=self.sasl_password)
        if self.tls:
            options["ssl_check_hostname"] = self.check_hostname
            if self.ca_file is not None:
                options["ssl_cafile"] = str(self.ca_file)
            if self.cert_file is not None:
                options["ssl_certfile"] = str(self.cert_file)
                options["ssl_keyfile"] = str(self.key_file)
                if self.key_password is not None:
                    options["ssl_password"] = self.key_password
        return options

    def unused(self) -> list[str]:
        """Settings given that ``security_protocol`` does not use (a likely misconfiguration)."""
        unused: list[str] = []
        if not self.sasl:
            unused += [f"kafka_{name}" for name in ("sasl_mechanism", "sasl_username",
                                                    "sasl_password")
                       if getattr(self, name) is not None]
        if not self.tls:
            unused += [f"kafka_{name}" for name in ("ca_file", "cert_file", "key_file",
                                                    "key_password")
                       if getattr(self, name) is not None]
        return unused

    def describe(self) -> str:
        """``127.0.0.1:9093 (SASL_SSL, SCRAM-SHA-512 as indexer)``: for messages and logs."""
        how: str = self.security_protocol
        if self.sasl:
            how += f", {self.sasl_mechanism} as {self.sasl_username}"
        return f"{self.bootstrap_servers} ({how})"

    def __repr__(self) -> str:
        shown = {
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": self.security_protocol,
            "sasl_mechanism": self.sasl_mechanism,
            "sasl_username": self.sasl_username,
            "sasl_password": MASK if self.sasl_password else None,
            "ca_file": self.ca_file,
            "cert_file": self.cert_file,
            "key_file": self.key_file,
            "key_password": MASK if self.key_password else None,
            "check_hostname": self.check_hostname,
        }
        inner = ", ".join(f"{k}={v!r}" for k, v in shown.items() if v is not None)
        return f"KafkaConnection({inner})"

    __str__ = __repr__


def as_connection(target: KafkaConnection | str) -> KafkaConnection:
    """A connection as given, or a ``"host:port,..."`` string as a PLAINTEXT one."""
    return target if isinstance(target, KafkaConnection) else KafkaConnection(target)


class KafkaConnectError(Exception):
    """A Kafka client could not be made; the message is one line naming broker and cause.

    Defined here, beside the connection and away from the client library, so that
    a command can catch it without importing kafka-python (the embedded mode never
    needs it)."""


class KafkaUnreachable(KafkaConnectError):
    """Nothing answered in time (down, network, wrong address): trying again may work."""


class KafkaRefused(KafkaConnectError):
    """The broker answered and refused this configuration (credentials, CA, protocol)."""
