"""Why a Kafka client could not be made, in one line that names the broker and what to check.

kafka-python (3.x) retries every bootstrap failure until its timeout and then
raises ``KafkaTimeoutError("Unable to bootstrap from [...]")``, whatever the
cause: a broker that is down, a wrong password, a CA that does not sign the
broker's certificate and a plaintext client on a TLS port all look the same.
The cause only goes to its log. So when a client cannot be made:

1. ``capture_client_errors`` has collected the exceptions kafka-python logged
   while it tried (a SASL login refused by the broker is only known that way);
2. ``diagnose`` probes the first bootstrap brokers itself with the standard
   library: a TCP connect, then a TLS handshake with the same context
   kafka-python builds (or, on a plaintext connection, a handshake that only
   asks whether the port speaks TLS).

The answer is ``KafkaRefused`` (the broker answered and refused this
configuration: retrying cannot help until it changes) or ``KafkaUnreachable``
(nothing answered in time: retry). The worker retries both at start (its
``/readyz`` carries the line meanwhile); a command prints it and exits 1.

The capture is process-wide while a client is being made: a failure logged by
another client of the same process at that moment could be read as this one's.
Every client of a process uses the same connection settings, so the line stays
true for the process.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kafka.errors import (
    AuthorizationError,
    IllegalSaslStateError,
    KafkaError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)

if TYPE_CHECKING:
    from transport.kafka_connection import KafkaConnection

PROBE_TIMEOUT_S = 3.0
PROBED_SERVERS = 3  # a long bootstrap list is not probed to its end
# OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH.
NAME_MISMATCH = (62, 64)
SASL_REFUSALS = (SaslAuthenticationFailedError, UnsupportedSaslMechanismError,
                 IllegalSaslStateError)


class KafkaConnectError(Exception):
    """A Kafka client could not be made; the message is one line naming broker and cause."""


class KafkaUnreachable(KafkaConnectError):
    """Nothing answered in time (down, network, wrong address): trying again may work."""


class KafkaRefused(KafkaConnectError):
    """The broker answered and refused this configuration (credentials, CA, protocol)."""


class _Collector(logging.Handler):
    """Keeps the exceptions kafka-python passes to its log calls (``log.warning('%s', exc)``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        self.errors.extend(a for a in args if isinstance(a, BaseException))


_capture_lock = threading.Lock()


@contextmanager
def capture_client_errors() -> Iterator[list[BaseException]]:
    """The exceptions kafka-python logs while the block runs (see the module docstring)."""
    collector = _Collector()
    logger = logging.getLogger("kafka")
    with _capture_lock:
        # The logger must pass warnings on for the handler to see them; the level is
        # put back after, and other handlers keep their own levels.
        previous = logger.level
        if logger.getEffectiveLevel() > logging.WARNING:
            logger.setLevel(logging.WARNING)
        logger.addHandler(collector)
    try:
        yield collector.errors
    finally:
        with _capture_lock:
            logger.removeHandler(collector)
            logger.setLevel(previous)


def diagnose(
    connection: KafkaConnection,
    error: BaseException,
    seen: list[BaseException] | None = None,
    *,
    timeout_s: float | None = None,
) -> KafkaConnectError:
    """The one-line reason ``connection`` failed with ``error`` (see the module docstring)."""
    where = connection.bootstrap_servers
    refusal = _sasl_refusal(connection, seen or [])
    if refusal is not None:
        return refusal
    reasons: list[str] = []
    for server in connection.servers()[:PROBED_SERVERS]:
        try:
            found = _probe(connection, server)
        except KafkaRefused as exc:
            return exc
        if found is None:  # TCP and TLS fine: the cause is further on
            break
        reasons.append(found)
    else:
        return KafkaUnreachable(
            f"cannot connect to Kafka at {where} ({'; '.join(reasons)}): check "
            "kafka_bootstrap_servers and that the brokers are up and reachable from here"
        )
    for logged in reversed(seen or []):
        if isinstance(logged, AuthorizationError):
            return KafkaRefused(f"Kafka at {connection.describe()} refused access: {logged}; "
                                "check the ACLs of the SASL user")
    waited = f" within {timeout_s:g}s" if timeout_s else ""
    return KafkaUnreachable(
        f"Kafka at {connection.describe()} did not answer{waited}: {type(error).__name__}: "
        f"{error}; check kafka_bootstrap_servers and kafka_security_protocol"
    )


def _sasl_refusal(connection: KafkaConnection, seen: list[BaseException]) -> KafkaRefused | None:
    for exc in reversed(seen):
        if isinstance(exc, SASL_REFUSALS):
            return KafkaRefused(
                f"Kafka at {connection.bootstrap_servers} refused the SASL login of "
                f"{connection.sasl_username!r} ({connection.sasl_mechanism}): "
                f"{_broker_message(exc)}; check kafka_sasl_username, kafka_sasl_password "
                "and kafka_sasl_mechanism"
            )
    return None


def _broker_message(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, KafkaError) and ": " in text:
        text = text.rsplit(": ", 1)[-1]  # kafka-python repeats the class name in front
    return text or type(exc).__name__


def _probe(connection: KafkaConnection, server: str) -> str | None:
    """None when TCP (and TLS) work; a reason when not; ``KafkaRefused`` when it never will."""
    host, _, port_text = server.rpartition(":")
    host = host.strip("[]") or "localhost"
    try:
        port = int(port_text)
    except ValueError as exc:
        raise KafkaRefused(f"kafka_bootstrap_servers entry {server!r} is not host:port") from exc
    try:
        sock = socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S)
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        return reason if connection.servers() == [server] else f"{server}: {reason}"
    with sock:
        if connection.tls:
            _check_tls(connection, sock, host, server)
        elif _speaks_tls(sock, host):
            raise KafkaRefused(
                f"Kafka at {server} speaks TLS but kafka_security_protocol is "
                f"{connection.security_protocol}: set SSL or SASL_SSL (with kafka_ca_file), "
                "or use the broker's plaintext listener"
            )
    return None


def tls_context(connection: KafkaConnection) -> ssl.SSLContext:
    """The context kafka-python builds from the same options (``KafkaSSLTransport``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = connection.check_hostname
    try:
        if connection.ca_file is not None:
            context.load_verify_locations(str(connection.ca_file))
        else:
            context.load_default_certs()
    except (OSError, ssl.SSLError) as exc:
        raise KafkaRefused(f"kafka_ca_file={connection.ca_file} cannot be used: {exc}") from exc
    if connection.cert_file is not None:
        try:
            context.load_cert_chain(str(connection.cert_file), str(connection.key_file),
                                    connection.key_password)
        except (OSError, ssl.SSLError) as exc:
            raise KafkaRefused(
                f"kafka_cert_file={connection.cert_file} / kafka_key_file="
                f"{connection.key_file} cannot be used: {exc}"
            ) from exc
    return context


def _check_tls(connection: KafkaConnection, sock: socket.socket, host: str, server: str) -> None:
    context = tls_context(connection)
    sock.settimeout(PROBE_TIMEOUT_S)
    try:
        with context.wrap_socket(sock, server_hostname=host):
            return
    except ssl.SSLCertVerificationError as exc:
        if exc.verify_code in NAME_MISMATCH:
            hint = ("that the address in kafka_bootstrap_servers is a name the certificate "
                    "holds, or kafka_ssl_check_hostname")
        else:
            hint = "kafka_ca_file (the CA that signed the brokers' certificates)" + (
                f", now {connection.ca_file}" if connection.ca_file else ", now the system's")
        raise KafkaRefused(
            f"TLS certificate of Kafka at {server} failed verification: "
            f"{exc.verify_message or exc.reason}; check {hint}"
        ) from exc
    except (ssl.SSLError, OSError) as exc:
        raise KafkaRefused(
            f"TLS handshake with Kafka at {server} failed ({_ssl_reason(exc)}): is it a TLS "
            f"listener? check kafka_security_protocol={connection.security_protocol} and the port"
        ) from exc


def _speaks_tls(sock: socket.socket, host: str) -> bool:
    """Does the port answer a TLS ClientHello with a handshake (certificates not checked)?"""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    sock.settimeout(PROBE_TIMEOUT_S)
    try:
        with context.wrap_socket(sock, server_hostname=host):
            return True
    except (ssl.SSLError, OSError):
        return False


def _ssl_reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason)
    return str(exc) or type(exc).__name__
