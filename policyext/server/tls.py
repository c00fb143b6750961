"""The server's TLS context, rebuilt when its certificate files change.

gunicorn asks for a context for every new connection. Building one reads and parses the
files (milliseconds), so the context is kept and built again only when a file's identity
(inode, size, change time) differs: a certificate renewed in place — cert-manager updating
the Secret, kubelet swapping the mounted files — is served to the next connection without
a restart. A half-done renewal (a key that does not match the certificate yet) keeps the
previous context until the files agree.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("policyext")

Stamp = tuple[tuple[int, int, int], ...]


@dataclass(frozen=True, slots=True)
class TLSFiles:
    cert: str
    key: str
    client_ca: str | None = None  # require client certificates signed by these CAs

    def paths(self) -> tuple[str, ...]:
        return (self.cert, self.key) + ((self.client_ca,) if self.client_ca else ())


def build_context(files: TLSFiles, *, client_optional: bool = False) -> ssl.SSLContext:
    """TLS 1.2 or newer; with a client CA, a client certificate is required, or only
    verified when one is offered (`client_optional`: the operations listener, whose probes
    come from the kubelet without one)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(files.cert, files.key)
    if files.client_ca:
        context.load_verify_locations(files.client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL if client_optional else ssl.CERT_REQUIRED
    return context


def identities(peer: dict[str, Any] | None) -> list[str]:
    """The names a verified client certificate stands for: its subject's common names and
    its DNS and URI subject alternative names (as `SSLSocket.getpeercert()` gives them)."""
    if not peer:
        return []
    names = [value for rdn in peer.get("subject", ()) for key, value in rdn if key == "commonName"]
    names += [value for kind, value in peer.get("subjectAltName", ()) if kind in ("DNS", "URI")]
    return names


def allowed(peer: dict[str, Any] | None, names: Collection[str]) -> bool:
    """Whether a verified client certificate carries one of `names` (exact match)."""
    return any(name in names for name in identities(peer))


@dataclass
class TLSContexts:
    files: TLSFiles
    client_optional: bool = False  # see build_context
    _context: ssl.SSLContext | None = None
    _stamp: Stamp | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _current_stamp(self) -> Stamp | None:
        try:
            stats = [os.stat(path) for path in self.files.paths()]
        except OSError:
            return None  # a file missing for a moment (being replaced): keep what we have
        return tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in stats)

    def get(self) -> ssl.SSLContext:
        stamp = self._current_stamp()
        with self._lock:
            context = self._context
            if context is not None and (stamp is None or stamp == self._stamp):
                return context
            try:
                context = build_context(self.files, client_optional=self.client_optional)
            except (OSError, ssl.SSLError) as e:
                if self._context is None:
                    raise
                log.warning("TLS files changed but cannot be loaded yet (%s); keeping the old", e)
                return self._context
            if self._context is not None:
                log.info("TLS certificate files changed: new connections use them")
            self._context, self._stamp = context, stamp
            return context
