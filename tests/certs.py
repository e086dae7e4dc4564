"""A throwaway PKI for TLS tests: one CA, a server and a client certificate.

Made with the `cryptography` package when it is installed, else with the
`openssl` command; `make_pki` returns None when neither is available.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    """A CA that signed nothing here: trusting it must fail the handshake."""


def make_pki(folder: Path) -> Pki | None:
    try:
        import cryptography  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        if shutil.which("openssl") is None:
            return None
        return _with_openssl(folder)
    return _with_cryptography(folder)


_SERVER_SAN = "DNS:localhost,DNS:gateway.test,IP:127.0.0.1"


def _with_openssl(folder: Path) -> Pki:
    def run(*argv: str) -> None:
        subprocess.run(["openssl", *argv], cwd=folder, check=True, capture_output=True)

    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    for ca in ("ca", "other-ca"):
        run(
            "req", "-x509", *ec, "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "1",
            "-subj", f"/CN=nav-agent test {ca}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        )  # fmt: skip
    for leaf, san, usage in (
        ("server", _SERVER_SAN, "serverAuth"),
        ("client", "DNS:nav-agent-client", "clientAuth"),
    ):
        run("req", *ec, "-keyout", f"{leaf}.key", "-out", f"{leaf}.csr", "-subj", f"/CN={leaf}")
        (folder / f"{leaf}.ext").write_text(
            f"subjectAltName={san}\nextendedKeyUsage={usage}\n", encoding="utf-8"
        )
        run(
            "x509", "-req", "-in", f"{leaf}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{leaf}.pem", "-days", "1", "-extfile", f"{leaf}.ext",
        )  # fmt: skip
    return _pki(folder)


def _with_cryptography(folder: Path) -> Pki:
    import datetime
    import ipaddress

    from cryptography import x509  # type: ignore[import-not-found, unused-ignore]
    from cryptography.hazmat.primitives import hashes, serialization  # type: ignore[import-not-found, unused-ignore]
    from cryptography.hazmat.primitives.asymmetric import ec  # type: ignore[import-not-found, unused-ignore]
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID  # type: ignore[import-not-found, unused-ignore]

    now = datetime.datetime.now(datetime.UTC)

    def write_key(name: str) -> ec.EllipticCurvePrivateKey:
        key = ec.generate_private_key(ec.SECP256R1())
        (folder / f"{name}.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return key

    def build(subject: str, issuer: str) -> x509.CertificateBuilder:
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
        )

    ca_keys = {}
    for ca in ("ca", "other-ca"):
        key = write_key(ca)
        ca_keys[ca] = key
        cert = (
            build(f"nav-agent test {ca}", f"nav-agent test {ca}")
            .public_key(key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        (folder / f"{ca}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    server_names: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.DNSName("gateway.test"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    for leaf, names, usage in (
        ("server", server_names, ExtendedKeyUsageOID.SERVER_AUTH),
        ("client", [x509.DNSName("nav-agent-client")], ExtendedKeyUsageOID.CLIENT_AUTH),
    ):
        key = write_key(leaf)
        cert = (
            build(leaf, "nav-agent test ca")
            .public_key(key.public_key())
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .sign(ca_keys["ca"], hashes.SHA256())
        )
        (folder / f"{leaf}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return _pki(folder)


def _pki(folder: Path) -> Pki:
    return Pki(
        ca=folder / "ca.pem",
        server_cert=folder / "server.pem",
        server_key=folder / "server.key",
        client_cert=folder / "client.pem",
        client_key=folder / "client.key",
        other_ca=folder / "other-ca.pem",
    )
