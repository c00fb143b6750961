"""Certificates renewed in place (cert-manager, a mounted Secret) are served to the next
connection without a restart; a half-done renewal keeps the old certificate serving."""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path

import pytest

from policyext.server.tls import TLSContexts, TLSFiles
from tests.server.certs import Pki, make_pki
from tests.server.conftest import ServerFactory
from tests.server.harness import ExtenderServer
from tests.server.test_tls import client_context


def _install(source: Path, target: Path) -> None:
    """Replace `target` at once, as kubelet's swap or a rename makes it change."""
    staging = target.with_name(target.name + ".new")
    shutil.copyfile(source, staging)
    staging.replace(target)


@pytest.fixture
def two_pkis(tmp_path: Path) -> tuple[Pki, Pki, Path]:
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    old, new = make_pki(tmp_path / "old"), make_pki(tmp_path / "new")
    live = tmp_path / "live"
    live.mkdir()
    _install(old.server.cert, live / "tls.crt")
    _install(old.server.key, live / "tls.key")
    return old, new, live


def _files(live: Path) -> TLSFiles:
    return TLSFiles(str(live / "tls.crt"), str(live / "tls.key"))


def test_the_context_is_kept_while_the_files_are_unchanged(two_pkis: tuple[Pki, Pki, Path]) -> None:
    _old, _new, live = two_pkis
    contexts = TLSContexts(_files(live))
    assert contexts.get() is contexts.get()


@pytest.mark.parametrize(
    ("renew", "serves"),
    [
        (("tls.crt", "tls.key"), "new"),
        (("tls.crt",), "old"),  # the key does not match the certificate yet
        ((), "old"),
    ],
    ids=["a complete renewal", "a certificate without its key yet", "nothing renewed"],
)
def test_a_renewal_is_taken_once_certificate_and_key_agree(
    two_pkis: tuple[Pki, Pki, Path], renew: tuple[str, ...], serves: str
) -> None:
    old, new, live = two_pkis
    contexts = TLSContexts(_files(live))
    first = contexts.get()
    sources = {"tls.crt": new.server.cert, "tls.key": new.server.key}
    for name in renew:
        _install(sources[name], live / name)
    context = contexts.get()
    assert (context is first) == (serves == "old")
    assert old.server.cert.read_bytes() != new.server.cert.read_bytes()


def test_the_first_context_fails_loudly_when_the_files_are_bad(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("not a certificate")
    (tmp_path / "tls.key").write_text("not a key")
    with pytest.raises(ssl.SSLError):
        TLSContexts(_files(tmp_path)).get()


@pytest.fixture
def rotating_server(
    serve: ServerFactory, two_pkis: tuple[Pki, Pki, Path]
) -> tuple[ExtenderServer, Pki, Pki, Path]:
    old, new, live = two_pkis
    server = serve(
        "--tls-cert",
        str(live / "tls.crt"),
        "--tls-key",
        str(live / "tls.key"),
        tls=client_context(old.ca),
    )
    return server, old, new, live


def test_a_running_server_serves_a_renewed_certificate_to_new_connections(
    rotating_server: tuple[ExtenderServer, Pki, Pki, Path],
) -> None:
    server, old, new, live = rotating_server
    assert server.request("GET", "/healthz", context=client_context(old.ca)).status == 200

    _install(new.server.cert, live / "tls.crt")
    # half-way: the old pair keeps serving
    assert server.request("GET", "/healthz", context=client_context(old.ca)).status == 200

    _install(new.server.key, live / "tls.key")
    assert server.request("GET", "/healthz", context=client_context(new.ca)).status == 200
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        server.request("GET", "/healthz", context=client_context(old.ca))
    assert "Traceback" not in server.stderr_text()
