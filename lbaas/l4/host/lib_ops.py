"""NftOps through one long-lived libnftables context (``libnft.NftSession``).

The same transactions and listings as ``RealNftOps`` (which it extends: conntrack still
runs as a program), without an ``nft`` process per command: at 10,000 load balancers a
process's start and first cache fill were most of what adding one cost (issue 34,
docs/architecture.md, "The L4 engine"). ``close`` ends the session's thread.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from lbaas.errors import InvalidRenderedConfig
from lbaas.l4.host.base import NftCommandFailed
from lbaas.l4.host.libnft import LIBRARY, LibNftUnavailable, NftSession
from lbaas.l4.host.real import RealNftOps

log = logging.getLogger(__name__)


class LibNftOps(RealNftOps):
    def __init__(self, namespace: str | None = None, *, library: str = LIBRARY) -> None:
        """Raises ``libnft.LibNftUnavailable`` when the library or namespace cannot be
        opened."""
        super().__init__(namespace)
        self._session = NftSession(namespace, library=library)

    def close(self) -> None:
        self._session.close()

    def check(self, ruleset: str) -> None:
        done = self._session.run(ruleset, dry_run=True)
        if not done.ok:
            raise InvalidRenderedConfig(
                "nft refused the L4 ruleset.", f"nft -c: {done.error.strip()}"
            )

    def load(self, ruleset: str) -> None:
        done = self._session.run(ruleset)
        if not done.ok:
            raise NftCommandFailed(["libnftables", "-f", "-"], 1, done.error)

    def list_table(self, name: str) -> str | None:
        done = self._session.run(f"list table ip {name}")
        return done.output if done.ok else None

    def has_table(self, name: str) -> bool:
        """A dry run of ``flush table``: the kernel answers it, where a listing makes
        libnftables read every chain and set of the namespace first."""
        return self._session.run(f"flush table ip {name}", dry_run=True).ok

    def list_chain_json(self, table: str, chain: str) -> dict[str, Any] | None:
        return self.list_json(("chain", "ip", table, chain))

    def list_json(self, words: Sequence[str], *, terse: bool = False) -> dict[str, Any] | None:
        done = self._session.run(f"list {' '.join(words)}", json=True, terse=terse)
        if not done.ok:
            return None
        listing: dict[str, Any] = json.loads(done.output)
        return listing


def node_nft_ops() -> RealNftOps:
    """A node agent's NftOps in its own namespace: ``LibNftOps``, or ``RealNftOps`` (an
    ``nft`` process a command, slower at scale) where the library cannot be opened."""
    try:
        return LibNftOps()
    except LibNftUnavailable as exc:
        log.warning("libnftables unavailable (%s): nft runs as a program per command", exc)
        return RealNftOps()
