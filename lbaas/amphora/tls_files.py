"""An amphora's certificate material on disk: ``<amphora>/tls``, 0700, files 0600.

Files arrive inside the amphora spec and are written before the configuration that names
them is validated (``haproxy -c`` opens them). Names are content digests chosen by the
controller, so writing a new certificate never changes a file the running HAProxy may
read again at its next start; files no longer named are removed only after the new
configuration is in place. The directory goes with the amphora's. Nothing here logs
contents.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lbaas.private_files import make_private_directory, write_private
from lbaas.wire.amphora import TlsFile

TLS_DIR = "tls"


def write_tls_files(amphora_dir: Path, files: Iterable[TlsFile]) -> None:
    wanted = list(files)
    if not wanted:
        return
    directory = amphora_dir / TLS_DIR
    make_private_directory(directory)
    for item in wanted:
        path = directory / item.name
        data = item.content.encode("utf-8")
        if not path.exists() or path.read_bytes() != data:
            write_private(path, data)


def prune_tls_files(amphora_dir: Path, keep: Iterable[TlsFile]) -> None:
    """Remove what the applied configuration no longer names."""
    directory = amphora_dir / TLS_DIR
    if not directory.is_dir():
        return
    names = {item.name for item in keep}
    for path in directory.iterdir():
        if path.name not in names:
            path.unlink(missing_ok=True)
