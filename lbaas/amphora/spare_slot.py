"""A spare amphora slot: a namespace whose HAProxy already runs, waiting for an amphora id.

Netns mode only. What a new amphora costs before it can load its configuration (the
namespace, a HAProxy master started through ``ip netns exec``, its first worker) is done
here ahead of time, with a placeholder configuration that serves nothing (one listener on
the namespace's own loopback: HAProxy refuses to start without one). Taking a slot for
amphora X makes it X's without stopping anything:

1. ``claimed-by`` in the slot's directory names X (so a crash from here on is recognised);
2. ``<amphorae>/X`` becomes a link to the slot's directory ``<amphorae>/.spares/<slot>``:
   the running master keeps the paths it was started with (its re-execution on a reload
   reads the same argv), and everything the agent does for X goes through the link;
3. the namespace is renamed to X's (``HostOps.rename_namespace``), so plumbing, keepalived,
   probes and diagnosis find it under the name they derive from the id.

X's first converge then reloads the placeholder master with X's configuration instead of
starting one, and without ``haproxy -c`` first (``HaproxyInstance._runs_placeholder``). ``.spares`` cannot collide with an amphora id (ids start with a letter or a
digit) and the registry's restore reads only ``<amphorae>/*/applied.json``.

Spares do not outlive their agent's bookkeeping: ``leftovers`` lists the slots an earlier
agent left (unclaimed, or claimed by an amphora that never got a configuration applied),
and ``discard`` stops their HAProxy and deletes their namespace, directory and link.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from lbaas.amphora.converger import APPLIED_FILE
from lbaas.amphora.haproxy_process import PLACEHOLDER_DIGEST, HaproxyInstance
from lbaas.amphora.plumbing import namespace_name
from lbaas.host.base import HaproxyFiles, HostOps, HostOpsError
from lbaas.private_files import make_private_directory, write_private
from lbaas.wire.amphora import HaproxyFacts

log = logging.getLogger(__name__)

SPARES_DIRECTORY = ".spares"
CLAIM_FILE = "claimed-by"
#: A spare's namespace is ``<agent.namespace_prefix><SPARE_NAMESPACE><8 hex>``.
SPARE_NAMESPACE = "spare-"
_SOCKET = "spare.sock"
_NAMESPACE_FILE = "namespace"


@dataclass(frozen=True)
class SpareSlot:
    """One prepared slot: its directory, its namespace and its HAProxy master."""

    name: str
    directory: Path
    namespace: str
    master_pid: int


def placeholder_config(directory: Path) -> str:
    """A configuration that serves nothing: one listener on the namespace's loopback."""
    return "\n".join(
        (
            "global",
            "    maxconn 64",
            f"    stats socket {directory / _SOCKET} mode 600 level admin expose-fd listeners",
            "defaults",
            "    mode tcp",
            "    timeout connect 1s",
            "    timeout client 1s",
            "    timeout server 1s",
            "frontend lbaas-spare",
            "    bind 127.0.0.1:9",
            "",
        )
    )


class SpareSlots:
    """Makes, hands over and tears down spare slots under ``<amphorae>/.spares``."""

    def __init__(self, amphora_root: Path, host: HostOps, namespace_prefix: str) -> None:
        self.amphora_root = amphora_root
        self.directory = amphora_root / SPARES_DIRECTORY
        self._host = host
        self._prefix = namespace_prefix

    def prepare(self) -> SpareSlot:
        """A new slot with its HAProxy running; nothing is left behind if that fails."""
        name = f"s{secrets.token_hex(4)}"
        directory = self.directory / name
        namespace = f"{self._prefix}{SPARE_NAMESPACE}{name[1:]}"
        make_private_directory(self.directory)
        make_private_directory(directory)
        write_private(directory / _NAMESPACE_FILE, namespace)
        try:
            self._host.create_namespace(namespace)
            instance = HaproxyInstance(directory, self._host, namespace=namespace)
            facts = HaproxyFacts(runtime_socket=_SOCKET, fixed_digest=PLACEHOLDER_DIGEST)
            instance.apply(placeholder_config(directory), facts)
            pid = instance.master_pid()
            if pid is None:
                raise HostOpsError(f"the HAProxy of spare {name} is not running")
        except BaseException:
            self.discard(directory)
            raise
        return SpareSlot(name, directory, namespace, pid)

    def claim(self, slot: SpareSlot, amphora_id: str) -> None:
        """Make ``slot`` amphora ``amphora_id``'s (see the module docstring)."""
        write_private(slot.directory / CLAIM_FILE, amphora_id)
        link = self.amphora_root / amphora_id
        os.symlink(Path(SPARES_DIRECTORY) / slot.name, link)
        try:
            new_name = self._amphora_namespace(amphora_id)
            self._host.rename_namespace(slot.namespace, new_name, slot.master_pid)
        except BaseException:
            link.unlink(missing_ok=True)
            raise

    def discard(self, directory: Path) -> None:
        """Stop the slot's HAProxy; delete its namespace (under either name), its
        directory and the amphora link to it. Idempotent."""
        claimant = _read(directory / CLAIM_FILE)
        self._host.stop_haproxy(HaproxyFiles.in_directory(directory))
        namespace = _read(directory / _NAMESPACE_FILE)
        if namespace:
            self._host.delete_namespace(namespace)
        if claimant:
            link = self.amphora_root / claimant
            if link.is_symlink() and link.resolve() == directory.resolve():
                self._host.delete_namespace(self._amphora_namespace(claimant))
                link.unlink()
        shutil.rmtree(directory, ignore_errors=True)

    def leftovers(self) -> list[Path]:
        """Slots an earlier agent left that no amphora uses (to be discarded)."""
        if not self.directory.is_dir():
            return []
        return [path for path in sorted(self.directory.iterdir()) if not self._in_use(path)]

    def _in_use(self, directory: Path) -> bool:
        """Claimed by an amphora that has applied its configuration (the registry's now)."""
        claimant = _read(directory / CLAIM_FILE)
        if not claimant:
            return False
        link = self.amphora_root / claimant
        return (
            link.is_symlink()
            and link.resolve() == directory.resolve()
            and (directory / APPLIED_FILE).exists()
        )

    def _amphora_namespace(self, amphora_id: str) -> str:
        return namespace_name(amphora_id, self._prefix)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""
