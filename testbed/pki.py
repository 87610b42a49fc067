"""Certificates and keys for the local control plane: one CA, the API server's serving
certificate, client certificates per component, and the service-account signing key."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = dt.timedelta(days=30)


@dataclass(frozen=True)
class CertPair:
    cert: Path
    key: Path


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


class LocalPKI:
    """Writes every certificate into one directory; a new bed gets a new CA."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._ca_key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        self._ca_cert = (
            x509.CertificateBuilder()
            .subject_name(_name("modelgate-local-ca"))
            .issuer_name(_name("modelgate-local-ca"))
            .public_key(self._ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._ca_key, hashes.SHA256())
        )
        self.ca = CertPair(directory / "ca.crt", directory / "ca.key")
        self.ca.cert.write_bytes(self._ca_cert.public_bytes(serialization.Encoding.PEM))
        _write_key(self._ca_key, self.ca.key)

    def issue(
        self,
        name: str,
        *,
        common_name: str,
        organization: str | None = None,
        server_hosts: tuple[str, ...] = (),
    ) -> CertPair:
        """A client certificate, or a serving one when `server_hosts` names DNS names or IPs."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        usage = [ExtendedKeyUsageOID.SERVER_AUTH] if server_hosts else [ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organization))
            .issuer_name(self._ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        )
        if server_hosts:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_san(host) for host in server_hosts]), critical=False
            )
        pair = CertPair(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        pair.cert.write_bytes(
            builder.sign(self._ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
        )
        _write_key(key, pair.key)
        return pair

    def service_account_keys(self) -> CertPair:
        """The key pair that signs service-account tokens (`cert` holds the public key)."""
        key = ec.generate_private_key(ec.SECP256R1())
        pair = CertPair(self.directory / "sa.pub", self.directory / "sa.key")
        pair.cert.write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        _write_key(key, pair.key)
        return pair


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
