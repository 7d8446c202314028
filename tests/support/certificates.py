"""A CA and server certificates made in the test (``cryptography``), as PEM files.

EC P-256 keys: made in milliseconds, so each test session has its own CA and
nothing secret or expiring is kept in the repository. ``fingerprint`` is the
SHA-256 of a certificate's DER form, written as Elasticsearch prints its CA's
at first start (``AA:BB:...``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID = timedelta(days=2)


@dataclass(frozen=True)
class Issued:
    """A certificate and its key on disk; ``chain`` is the certificate then its issuer's."""

    cert: Path
    key: Path
    chain: Path
    der: bytes

    @property
    def fingerprint(self) -> str:
        return der_fingerprint(self.der)


def der_fingerprint(der: bytes) -> str:
    digest = hashes.Hash(hashes.SHA256())
    digest.update(der)
    return ":".join(f"{b:02X}" for b in digest.finalize())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(folder: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey,
           issuer_pem: bytes = b"") -> Issued:
    folder.mkdir(parents=True, exist_ok=True)
    pem = cert.public_bytes(serialization.Encoding.PEM)
    (folder / f"{stem}.crt").write_bytes(pem)
    (folder / f"{stem}.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    (folder / f"{stem}-chain.crt").write_bytes(pem + issuer_pem)
    return Issued(folder / f"{stem}.crt", folder / f"{stem}.key", folder / f"{stem}-chain.crt",
                  cert.public_bytes(serialization.Encoding.DER))


@dataclass(frozen=True)
class Authority:
    """A CA that signs server certificates for 127.0.0.1 and localhost."""

    name: str
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate
    files: Issued

    @classmethod
    def create(cls, folder: Path, name: str = "policy-indexer test CA") -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.now(UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name)).issuer_name(_name(name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(name, key, cert, _write(folder, "ca", cert, key))

    def issue_server(self, folder: Path, stem: str = "server") -> Issued:
        """A server certificate for 127.0.0.1 / localhost, signed by this CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _server_builder(key).issuer_name(self.cert.subject).add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
            critical=False,
        ).sign(self.key, hashes.SHA256())
        return _write(folder, stem, cert, key,
                      self.cert.public_bytes(serialization.Encoding.PEM))


def self_signed_server(folder: Path, stem: str = "self-signed") -> Issued:
    """A server certificate signed by its own key: what a node shows before it has a CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _server_builder(key).issuer_name(_name("127.0.0.1")).sign(key, hashes.SHA256())
    return _write(folder, stem, cert, key)


def _server_builder(key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + VALID)
        .add_extension(x509.SubjectAlternativeName([
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost"),
        ]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    )
