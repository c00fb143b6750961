"""A throwaway PKI for the TLS tests: two CAs, a server certificate for 127.0.0.1 and
client certificates signed by either CA. EC P-256 keys: fast to make."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Key = ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    ca: Path  # signs the server and the good client
    other_ca: Path  # signs the rogue client; never trusted by the server
    server: Pair
    client: Pair
    rogue_client: Pair
    # signed by `ca`, but outside their validity period
    expired_server: Pair
    future_server: Pair
    expired_client: Pair
    future_client: Pair
    # signed by `ca` for other names: another client of the same CA, and one named by a
    # URI subject alternative name only (a SPIFFE ID)
    other_client: Pair
    uri_client: Pair


SPIFFE_ID = "spiffe://cluster.local/ns/kube-system/sa/kube-scheduler"


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


# validity periods relative to now: current, ended yesterday, starting tomorrow
CURRENT = (datetime.timedelta(minutes=-5), datetime.timedelta(days=1))
EXPIRED = (datetime.timedelta(days=-30), datetime.timedelta(days=-1))
FUTURE = (datetime.timedelta(days=1), datetime.timedelta(days=30))


def _builder(
    subject: str,
    issuer: x509.Name,
    key: Key,
    validity: tuple[datetime.timedelta, datetime.timedelta] = CURRENT,
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + validity[0])
        .not_valid_after(now + validity[1])
    )


def _write(path: Path, cert: x509.Certificate, key: Key | None = None) -> Pair:
    path.with_suffix(".crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path = path.with_suffix(".key")
    if key is not None:
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return Pair(path.with_suffix(".crt"), key_path)


def _ca(directory: Path, name: str) -> tuple[x509.Certificate, Key, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(name, _name(name), key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return cert, key, _write(directory / name, cert).cert


def _leaf(
    directory: Path,
    name: str,
    ca: x509.Certificate,
    ca_key: Key,
    *,
    server: bool,
    validity: tuple[datetime.timedelta, datetime.timedelta] = CURRENT,
    uri: str | None = None,
) -> Pair:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(name, ca.subject, key, validity).add_extension(
        x509.BasicConstraints(ca=False, path_length=None), critical=True
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    else:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        if uri is not None:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.UniformResourceIdentifier(uri)]), critical=False
            )
    return _write(directory / name, builder.sign(ca_key, hashes.SHA256()), key)


def make_pki(directory: Path) -> Pki:
    ca, ca_key, ca_path = _ca(directory, "policyext-test-ca")
    other, other_key, other_path = _ca(directory, "someone-elses-ca")
    return Pki(
        ca=ca_path,
        other_ca=other_path,
        server=_leaf(directory, "policyext-server", ca, ca_key, server=True),
        client=_leaf(directory, "kube-scheduler", ca, ca_key, server=False),
        rogue_client=_leaf(directory, "rogue-client", other, other_key, server=False),
        expired_server=_leaf(
            directory, "expired-server", ca, ca_key, server=True, validity=EXPIRED
        ),
        future_server=_leaf(directory, "future-server", ca, ca_key, server=True, validity=FUTURE),
        expired_client=_leaf(
            directory, "expired-client", ca, ca_key, server=False, validity=EXPIRED
        ),
        future_client=_leaf(directory, "future-client", ca, ca_key, server=False, validity=FUTURE),
        other_client=_leaf(directory, "other-client", ca, ca_key, server=False),
        uri_client=_leaf(directory, "workload", ca, ca_key, server=False, uri=SPIFFE_ID),
    )
