"""Why a Kafka client could not be made, in one line that names the broker and what to check.

kafka-python (3.x) retries every bootstrap failure until its timeout and then
raises ``KafkaTimeoutError("Unable to bootstrap from [...]")``, whatever the
cause: a broker that is down, a wrong password, a CA that does not sign the
broker's certificate and a plaintext client on a TLS port all look the same,
and the cause goes only to its log (not even reliably there: after a refused
SASL login its TLS transport often sees the broker close the socket before it
reads the refusal). So when a client cannot be made, ``diagnose`` probes the
first bootstrap brokers itself, with a socket that reads each answer before
the next step:

1. a TCP connect;
2. on SSL and SASL_SSL, a TLS handshake with the context kafka-python builds
   from the same options; on PLAINTEXT and SASL_PLAINTEXT, a handshake that
   only asks whether the port speaks TLS;
3. on SASL_*, the login itself (SaslHandshake, then SaslAuthenticate with
   kafka-python's own PLAIN/SCRAM mechanism).

The answer is ``KafkaRefused`` (the broker answered and refused this
configuration: retrying cannot help until it changes) or ``KafkaUnreachable``
(nothing answered in time: retry). The worker retries both at start (its
``/readyz`` carries the line meanwhile, since a fixed secret or mount mends a
refusal without a restart); a command prints it and exits 1.
"""

from __future__ import annotations

import socket
import ssl
import struct
from typing import TYPE_CHECKING, Any

import structlog
from kafka.errors import KafkaError, for_code
from kafka.net.sasl import get_sasl_mechanism
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from transport.kafka_connection import KafkaConnectError, KafkaRefused, KafkaUnreachable

if TYPE_CHECKING:
    from transport.kafka_connection import KafkaConnection

log = structlog.get_logger(__name__)

PROBE_TIMEOUT_S = 3.0
PROBED_SERVERS = 3  # a long bootstrap list is not probed to its end
MAX_PROBE_FRAME = 1024 * 1024  # a SASL answer is a few hundred bytes
# OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH.
NAME_MISMATCH = (62, 64)


def diagnose(
    connection: KafkaConnection, error: BaseException, *, timeout_s: float | None = None,
) -> KafkaConnectError:
    """The one-line reason ``connection`` failed with ``error`` (see the module docstring)."""
    where = connection.bootstrap_servers
    reasons: list[str] = []
    for server in connection.servers()[:PROBED_SERVERS]:
        try:
            found = _probe(connection, server)
        except KafkaRefused as exc:
            return exc
        if found is None:  # TCP, TLS and the login work: the cause is further on
            break
        reasons.append(found)
    else:
        return KafkaUnreachable(
            f"cannot connect to Kafka at {where} ({'; '.join(reasons)}): check "
            "kafka_bootstrap_servers and that the brokers are up and reachable from here"
        )
    waited = f" within {timeout_s:g}s" if timeout_s else ""
    return KafkaUnreachable(
        f"Kafka at {connection.describe()} did not answer{waited}: {type(error).__name__}: "
        f"{error}; check kafka_bootstrap_servers and kafka_security_protocol"
    )


def _probe(connection: KafkaConnection, server: str) -> str | None:
    """None when TCP, TLS and the login work; a reason when TCP does not; ``KafkaRefused``
    when the broker answered and said no."""
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
    sock.settimeout(PROBE_TIMEOUT_S)
    with sock:
        if connection.tls:
            with _tls(connection, sock, host, server) as secured:
                if connection.sasl:
                    _login(connection, secured, server)
            return None
        if _speaks_tls(host, port):
            raise KafkaRefused(
                f"Kafka at {server} speaks TLS but kafka_security_protocol is "
                f"{connection.security_protocol}: set SSL or SASL_SSL (with kafka_ca_file), "
                "or use the broker's plaintext listener"
            )
        if connection.sasl:
            _login(connection, sock, server)
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


def _tls(
    connection: KafkaConnection, sock: socket.socket, host: str, server: str
) -> ssl.SSLSocket:
    context = tls_context(connection)
    try:
        return context.wrap_socket(sock, server_hostname=host)
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


def _speaks_tls(host: str, port: int) -> bool:
    """Does the port answer a TLS ClientHello with a handshake (certificates not checked)?

    On its own connection: a plaintext broker drops one that sent it a ClientHello.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S) as sock, \
                context.wrap_socket(sock, server_hostname=host):
            return True
    except (ssl.SSLError, OSError):
        return False


def _login(connection: KafkaConnection, sock: socket.socket, server: str) -> None:
    """The SASL login kafka-python would make; ``KafkaRefused`` with the broker's reason.

    A probe that cannot finish for another reason (the connection dropped, an
    answer it cannot read) says nothing: the caller keeps kafka-python's error.
    """
    mechanism = connection.sasl_mechanism
    try:
        handshake = _exchange(sock, 1, SaslHandshakeRequest(version=1, mechanism=mechanism),
                              SaslHandshakeResponse)
        if handshake.error_code:
            raise KafkaRefused(
                f"Kafka at {server} does not offer SASL {mechanism} (it offers "
                f"{', '.join(handshake.mechanisms) or 'none'}): check kafka_sasl_mechanism")
        client = get_sasl_mechanism(mechanism)(**connection.client_options())
        correlation = 1
        while not client.is_done():
            correlation += 1
            answer = _exchange(sock, correlation, SaslAuthenticateRequest(
                version=1, auth_bytes=client.auth_bytes()), SaslAuthenticateResponse)
            if answer.error_code:
                reason = answer.error_message or for_code(answer.error_code).__name__
                raise KafkaRefused(
                    f"Kafka at {server} refused the SASL login of "
                    f"{connection.sasl_username!r} ({mechanism}): {reason}; check "
                    "kafka_sasl_username, kafka_sasl_password and kafka_sasl_mechanism")
            client.receive(answer.auth_bytes)
    except KafkaRefused:
        raise
    except (OSError, ValueError, struct.error, KafkaError) as exc:
        log.debug("kafka login probe inconclusive", server=server, error=repr(exc))


def _exchange(sock: socket.socket, correlation: int, request: Any, response_class: Any) -> Any:
    """Send one framed request and read its framed answer (kafka-python's message classes)."""
    request.with_header(correlation_id=correlation, client_id="policy-indexer-probe")
    sock.sendall(request.encode(header=True, framed=True))
    size = struct.unpack(">i", _read(sock, 4))[0]
    if not 0 < size <= MAX_PROBE_FRAME:
        raise ValueError(f"answer of {size} bytes")
    return response_class.decode(_read(sock, size), version=request.API_VERSION, header=True)


def _read(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return bytes(data)


def _ssl_reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason)
    return str(exc) or type(exc).__name__
