"""A certificate authority made in the test, and server certificates it signs (``cryptography``).

A test that needs TLS makes its own CA in ``tmp_path`` instead of shipping a
key in the repository: every run has fresh keys, and a second, unrelated CA
stands in for "a CA the client does not trust".
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class ServerCertificate:
    cert_file: Path  # the leaf certificate, PEM
    key_file: Path  # its private key, PKCS#8 PEM, encrypted with key_password when set
    key_password: str | None
    keystore_file: Path  # key then certificate in one PEM file (Kafka's PEM keystore)


@dataclass(frozen=True)
class CertificateAuthority:
    """A self-signed CA in ``folder``: ``ca_file`` is what a client is told to trust."""


    folder: Path
    name: str
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @property
    def ca_file(self) -> Path:
        return self.folder / f"{self.name}-ca.pem"

    @classmethod
    def create(cls, folder: Path, name: str = "test") -> CertificateAuthority:
        folder.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"policy-indexer {name} CA")])
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False,
            ), critical=True)
            .sign(key, hashes.SHA256())
        )
        ca = cls(folder, name, key, cert)
        ca.ca_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return ca

    def issue_server(
        self, name: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
        key_password: str | None = None,
    ) -> ServerCertificate:
        """A server certificate for ``hosts`` (IPs and DNS names), signed by this CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        sans: list[x509.GeneralName] = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        now = dt.datetime.now(dt.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(self.key, hashes.SHA256())
        )
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(key_password.encode())
            if key_password else serialization.NoEncryption()
        )
        key_pem = key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8, encryption)
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        ca_pem = self.cert.public_bytes(serialization.Encoding.PEM)
        server = ServerCertificate(
            cert_file=self.folder / f"{name}.crt.pem",
            key_file=self.folder / f"{name}.key.pem",
            key_password=key_password,
            keystore_file=self.folder / f"{name}.keystore.pem",
        )
        server.cert_file.write_bytes(cert_pem + ca_pem)
        server.key_file.write_bytes(key_pem)
        server.keystore_file.write_bytes(key_pem + cert_pem + ca_pem)
        return server
