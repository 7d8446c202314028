"""Why a Kafka client could not be made: one line naming the broker and what to check.

The probes run against small loopback servers of the test's own (a TLS server
with a certificate from a CA made here, a plain TCP server, a closed port);
the SASL login probe (a Kafka exchange) is checked on the real broker in
``tests/integration/test_kafka_sasl_ssl.py``.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.errors import KafkaTimeoutError
from support.tls_ca import CertificateAuthority

from transport.kafka import KafkaConnection, KafkaRefused, KafkaUnreachable
from transport.kafka_diagnose import diagnose

TIMEOUT = KafkaTimeoutError("Unable to bootstrap from ['127.0.0.1:1']")


class _Server:
    """Accepts connections on loopback; with ``tls``, completes a TLS handshake first."""

    def __init__(self, tls: ssl.SSLContext | None) -> None:
        self.tls = tls
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            conn.settimeout(2)
            try:
                if self.tls is not None:
                    with self.tls.wrap_socket(conn, server_side=True):
                        pass
                else:
                    conn.recv(1024)
                    conn.close()
            except (OSError, ssl.SSLError):
                conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.fixture(scope="module")
def cas(tmp_path_factory: pytest.TempPathFactory) -> tuple[CertificateAuthority, Path]:
    folder = tmp_path_factory.mktemp("tls")
    return CertificateAuthority.create(folder, "broker"), CertificateAuthority.create(
        folder, "other").ca_file


@pytest.fixture(scope="module")
def tls_server(cas: tuple[CertificateAuthority, Path]) -> Iterator[_Server]:
    ca, _ = cas
    cert = ca.issue_server("server")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert.cert_file, cert.key_file)
    server = _Server(context)
    yield server
    server.close()


@pytest.fixture(scope="module")
def plain_server() -> Iterator[_Server]:
    server = _Server(None)
    yield server
    server.close()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_nothing_listening_is_unreachable_naming_the_address() -> None:
    port = closed_port()
    error = diagnose(KafkaConnection(f"127.0.0.1:{port}"), TIMEOUT)
    assert isinstance(error, KafkaUnreachable)
    assert str(error).startswith(f"cannot connect to Kafka at 127.0.0.1:{port} (")
    assert "check kafka_bootstrap_servers" in str(error)
    assert "\n" not in str(error)


def test_a_plaintext_client_on_a_tls_port_is_told_to_use_tls(tls_server: _Server) -> None:
    error = diagnose(KafkaConnection(f"127.0.0.1:{tls_server.port}"), TIMEOUT)
    assert isinstance(error, KafkaRefused)
    assert str(error) == (
        f"Kafka at 127.0.0.1:{tls_server.port} speaks TLS but kafka_security_protocol is "
        "PLAINTEXT: set SSL or SASL_SSL (with kafka_ca_file), or use the broker's plaintext "
        "listener"
    )


def test_a_ca_that_did_not_sign_the_broker_is_a_verification_failure(
    tls_server: _Server, cas: tuple[CertificateAuthority, Path]
) -> None:
    _, other_ca = cas
    error = diagnose(KafkaConnection(f"127.0.0.1:{tls_server.port}", "SSL", ca_file=other_ca),
                     TIMEOUT)
    assert isinstance(error, KafkaRefused)
    text = str(error)
    assert text.startswith(f"TLS certificate of Kafka at 127.0.0.1:{tls_server.port} failed "
                           "verification:")
    assert "check kafka_ca_file" in text
    assert str(other_ca) in text


def test_a_certificate_for_another_host_names_the_hostname_check(
    tmp_path: Path, cas: tuple[CertificateAuthority, Path]
) -> None:
    ca, _ = cas
    cert = ca.issue_server("elsewhere", hosts=("kafka.elsewhere.example",))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert.cert_file, cert.key_file)
    server = _Server(context)
    try:
        error = diagnose(KafkaConnection(f"127.0.0.1:{server.port}", "SSL", ca_file=ca.ca_file),
                         TIMEOUT)
    finally:
        server.close()
    assert isinstance(error, KafkaRefused)
    assert "failed verification" in str(error)
    assert "kafka_ssl_check_hostname" in str(error)


def test_a_tls_client_on_a_plaintext_port_is_a_failed_handshake(
    plain_server: _Server, cas: tuple[CertificateAuthority, Path]
) -> None:
    ca, _ = cas
    connection = KafkaConnection(f"127.0.0.1:{plain_server.port}", "SASL_SSL", "SCRAM-SHA-512",
                                 "indexer", "pw-1234", ca_file=ca.ca_file)
    error = diagnose(connection, TIMEOUT)
    assert isinstance(error, KafkaRefused)
    assert str(error).startswith(f"TLS handshake with Kafka at 127.0.0.1:{plain_server.port} "
                                 "failed (")
    assert "check kafka_security_protocol=SASL_SSL and the port" in str(error)


def test_a_ca_file_that_cannot_be_read_is_named(tls_server: _Server, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-ca.pem"
    error = diagnose(KafkaConnection(f"127.0.0.1:{tls_server.port}", "SSL", ca_file=missing),
                     TIMEOUT)
    assert isinstance(error, KafkaRefused)
    assert str(error).startswith(f"kafka_ca_file={missing} cannot be used:")


def test_tls_that_works_leaves_the_timeout_as_the_reason(
    tls_server: _Server, cas: tuple[CertificateAuthority, Path]
) -> None:
    ca, _ = cas
    error = diagnose(KafkaConnection(f"127.0.0.1:{tls_server.port}", "SSL", ca_file=ca.ca_file),
                     TIMEOUT, timeout_s=5)
    assert isinstance(error, KafkaUnreachable)
    assert str(error).startswith(f"Kafka at 127.0.0.1:{tls_server.port} (SSL) did not answer "
                                 "within 5s: KafkaTimeoutError")
