"""The certificate of the go-plugin handshake (AutoMTLS).

A fresh self-signed certificate for this process, which the host trusts
because the handshake line carries it: an ECDSA P-256 key, DNS name
"localhost", a CA (the host verifies the server against this very
certificate), key usages digital signature and cert sign, extended key
usages serverAuth and clientAuth, SHA-256 signature.
"""

from __future__ import annotations

import base64
import datetime
import secrets
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class PluginCert:
    cert_pem: bytes
    key_pem: bytes
    der: bytes


def make_cert(now: datetime.datetime | None = None) -> PluginCert:
    """Returns a new certificate and key for this process."""
    now = now or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "dex-agents runner"),
        ]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        # A positive 127-bit serial number.
        .serial_number(secrets.randbits(127) | 1)
        # Valid from a little before now, as go-plugin's own, so a clock a
        # few seconds apart does not refuse it.
        .not_valid_before(now - datetime.timedelta(seconds=30))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return PluginCert(
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        der=cert.public_bytes(serialization.Encoding.DER),
    )


def handshake_cert(der: bytes) -> str:
    """The certificate as the handshake line carries it: standard base64
    without "=" padding (Go's base64.RawStdEncoding)."""
    return base64.b64encode(der).decode("ascii").rstrip("=")
