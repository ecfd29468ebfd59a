"""An ``ssl.SSLContext`` that follows its files: renewed certificates without a restart.

uvicorn hands one context to asyncio's server for its whole life, and an httpx client
keeps the context it was built with in its connection pool. Neither can be told "use this
new context from now on". What both do, for every new connection, is ask their context
to wrap it: ``wrap_bio`` (asyncio's server side) or ``wrap_socket`` (httpcore's client
side). ``ReloadingContext`` is a context that answers those calls with a context freshly
built from its ``TlsFiles`` whenever the certificate, the key or the trust bundle changed
on disk (seen by their size, inode and mtime, a few ``stat`` calls per new connection).
So a renewal, a new trust bundle or a retired CA reaches the next connection;
established connections keep the context they were made with until they close.

A half-written identity (the new key on disk, the old certificate still there: they are
renamed into place one after the other) fails to load; the previous context then stays
in use and the next connection tries again, so no handshake sees a key that does not
match its certificate.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
from collections.abc import Callable

from lbaas.certs.authority import TlsFiles

log = logging.getLogger(__name__)

Build = Callable[[TlsFiles], ssl.SSLContext]
_Signature = tuple[tuple[int, int, int], ...]


def _signature(files: TlsFiles) -> _Signature:
    found = []
    for path in (files.cert, files.key, files.ca):
        try:
            st = os.stat(path)
        except OSError:
            found.append((0, 0, 0))
        else:
            found.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(found)


class ReloadingContext(ssl.SSLContext):
    """Wraps each new connection with the context built from the files as they are now."""

    files: TlsFiles
    reloads: int

    def __new__(cls, files: TlsFiles, build: Build) -> ReloadingContext:
        # The protocol of this outer context is never used: every wrap is delegated.
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def __init__(self, files: TlsFiles, build: Build) -> None:
        self.files = files
        self._build = build
        self._lock = threading.Lock()
        self._signature = _signature(files)
        self._failed: _Signature | None = None
        self._current = build(files)  # a broken identity at start is the caller's error
        self.reloads = 0

    def current(self) -> ssl.SSLContext:
        """The context of the files as they are on disk (rebuilt if they changed)."""
        seen = _signature(self.files)
        with self._lock:
            if seen in (self._signature, self._failed):
                return self._current
            try:
                fresh = self._build(self.files)
            except (OSError, ssl.SSLError, ValueError) as exc:
                # Mid-rename, or broken: keep serving with what worked; tried again (and
                # logged again) only once the files change.
                self._failed = seen
                log.warning("TLS files %s not reloaded (kept the previous): %s", self.files, exc)
                return self._current
            self._current, self._signature = fresh, seen
            self.reloads += 1
            log.info("TLS identity %s reloaded", self.files.cert)
            return fresh

    def wrap_socket(
        self,
        sock: socket.socket,
        server_side: bool = False,
        do_handshake_on_connect: bool = True,
        suppress_ragged_eofs: bool = True,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLSocket:
        return self.current().wrap_socket(
            sock,
            server_side=server_side,
            do_handshake_on_connect=do_handshake_on_connect,
            suppress_ragged_eofs=suppress_ragged_eofs,
            server_hostname=server_hostname,
            session=session,
        )

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        return self.current().wrap_bio(
            incoming,
            outgoing,
            server_side=server_side,
            server_hostname=server_hostname,
            session=session,
        )
