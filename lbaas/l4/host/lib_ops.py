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
from lbaas.l4.host.nft_dump import read_rule_comments, read_slot_map, read_table_names
from lbaas.l4.host.nft_netlink import (
    Batch,
    NetlinkRefused,
    NetlinkSocket,
    address_key,
    dispatch_key,
    slot_key,
    target_value,
)
from lbaas.l4.host.real import RealNftOps
from lbaas.l4.nft import TABLE
from lbaas.l4.nft_steps import Step, Verb

log = logging.getLogger(__name__)


class LibNftOps(RealNftOps):
    def __init__(self, namespace: str | None = None, *, library: str = LIBRARY) -> None:
        """Raises ``libnft.LibNftUnavailable`` when the library or namespace cannot be
        opened."""
        super().__init__(namespace)
        self._session = NftSession(namespace, library=library)
        self._netlink: NetlinkSocket | None = None  # opened by the session's worker

    def close(self) -> None:
        if self._netlink is not None:
            self._session.in_namespace(self._netlink.close)
        self._session.close()

    def load_steps(self, ruleset: str, steps: Sequence[Step]) -> None:
        """The steps as one nf_tables netlink batch (``host/nft_netlink.py``), and
        ``ruleset`` through libnftables if the kernel refuses them (nothing applied)."""
        try:
            self._session.in_namespace(lambda: self._socket().send(batch_of(steps)))
        except (NetlinkRefused, OSError) as exc:
            log.info("element steps refused (%s): loading their text", exc)
            self.load(ruleset)

    def rule_comments(self) -> dict[str, tuple[str, ...]] | None:
        """One netlink dump of the table's rules (``nft_dump``): {} when it is refused (no
        table: nothing to keep)."""
        try:
            return self._session.in_namespace(lambda: read_rule_comments(self._socket(), TABLE))
        except (NetlinkRefused, OSError) as exc:
            log.info("rules not read (%s): nothing kept", exc)
            return {}

    def table_names(self) -> list[str]:
        """One netlink dump of the tables (no libnftables cache: see ``nft_dump``)."""
        try:
            return self._session.in_namespace(lambda: read_table_names(self._socket()))
        except (NetlinkRefused, OSError) as exc:
            log.warning("tables not read (%s)", exc)
            return []

    def slot_map(self, name: str) -> list[str | None] | None:
        """One netlink dump of the map's elements; None when it is refused (no such map)."""
        try:
            return self._session.in_namespace(lambda: read_slot_map(self._socket(), TABLE, name))
        except (NetlinkRefused, OSError):
            return None

    def _socket(self) -> NetlinkSocket:
        """The netlink socket, opened on first use (from the worker: its namespace)."""
        if self._netlink is None:
            self._netlink = NetlinkSocket()
        return self._netlink

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


def batch_of(steps: Sequence[Step]) -> Batch:
    batch = Batch(TABLE)
    for step in steps:
        match step.verb:
            case Verb.DELETE_SLOTS:
                batch.delete_elements(step.name, (slot_key(int(key)) for key in step.keys))
            case Verb.ADD_SLOTS:
                pairs = ((slot_key(s), target_value(a, p)) for s, a, p in step.slots)
                batch.add_elements(step.name, pairs)
            case Verb.DELETE_DISPATCH:
                keys = (key.split(" . ") for key in step.keys)
                batch.delete_elements(step.name, (dispatch_key(v, t, int(p)) for v, t, p in keys))
            case Verb.DELETE_ENTRY:
                batch.delete_elements(step.name, map(address_key, step.keys))
            case Verb.ADD_DISPATCH:
                keys = (key.split(" . ") for key in step.keys)
                jumps = ((dispatch_key(v, t, int(p)), step.chain) for v, t, p in keys)
                batch.add_jumps(step.name, jumps)
            case Verb.ADD_ENTRY:
                batch.add_keys(step.name, map(address_key, step.keys))
            case Verb.FLUSH_CHAIN:
                batch.flush_chain(step.name)
            case Verb.DELETE_CHAIN:
                batch.delete_chain(step.name)
            case Verb.DELETE_SET:
                batch.delete_set(step.name)
            case Verb.DELETE_CT_TIMEOUT:
                batch.delete_ct_timeout(step.name)
    return batch


def node_nft_ops() -> RealNftOps:
    """A node agent's NftOps in its own namespace: ``LibNftOps``, or ``RealNftOps`` (an
    ``nft`` process a command, slower at scale) where the library cannot be opened."""
    try:
        return LibNftOps()
    except LibNftUnavailable as exc:
        log.warning("libnftables unavailable (%s): nft runs as a program per command", exc)
        return RealNftOps()
