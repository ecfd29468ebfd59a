"""An NftOps that runs nothing: it keeps what it was asked to do, for unit tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lbaas.l4.host.base import DsrRouter, FlowMatch, NftOps, VipAnnouncer, VipHolder
from lbaas.l4.service import L4Protocol, L4Service


class RecordingNftOps(NftOps):
    def __init__(self) -> None:
        self.checked: list[str] = []
        self.loaded: list[str] = []
        self.deleted_flows: list[FlowMatch] = []
        # What list_chain_json answers, set by the test.
        self.chains: dict[tuple[str, str], dict[str, Any]] = {}
        # What list_json answers, by its words, set by the test; and what it was asked.
        self.listings: dict[tuple[str, ...], dict[str, Any]] = {}
        self.listings_read: list[tuple[str, ...]] = []
        # What rule_comments and slot_map answer, set by the test (None: cannot read).
        self.comments: dict[str, tuple[str, ...]] | None = None
        self.slot_maps: dict[str, list[str | None]] = {}
        # What count_flows answers, by (protocol, VIP, port), set by the test.
        self.flow_counts: dict[tuple[L4Protocol, str, int], int] = {}

    def check(self, ruleset: str) -> None:
        self.checked.append(ruleset)

    def load(self, ruleset: str) -> None:
        self.loaded.append(ruleset)

    def list_table(self, name: str) -> str | None:
        return None

    def list_chain_json(self, table: str, chain: str) -> dict[str, Any] | None:
        return self.chains.get((table, chain))

    def list_json(self, words: Sequence[str], *, terse: bool = False) -> dict[str, Any] | None:
        """What the test set in ``listings`` (``set_flows`` sets the dispatch map's)."""
        self.listings_read.append(tuple(words))
        return self.listings.get(tuple(words))

    def set_flows(self, chain: str, vip: str, flows: dict[str, int]) -> None:
        """Have the dispatch map's listing count ``flows`` (by listener name, ``tcp_80``)
        for the load balancer chain ``chain`` at ``vip``, as ``nft -j`` lists it."""
        key = ("map", "ip", "lbaas", "dispatch")
        listing = self.listings.setdefault(key, {"nftables": [{"map": {"name": "dispatch"}}]})
        elements = listing["nftables"][0]["map"].setdefault("elem", [])
        for name, packets in flows.items():
            protocol, port = name.split("_")
            value = {"concat": [vip, protocol, int(port)]}
            elements[:] = [e for e in elements if e[0]["elem"]["val"] != value]
            counter = {"packets": packets, "bytes": 60 * packets}
            elements.append([{"elem": {"val": value, "counter": counter}},
                             {"jump": {"target": chain}}])  # fmt: skip

    def rule_comments(self) -> dict[str, tuple[str, ...]] | None:
        return self.comments

    def slot_map(self, name: str) -> list[str | None] | None:
        return self.slot_maps.get(name)

    def count_flows(self, protocol: L4Protocol, vip: str, port: int) -> int:
        return self.flow_counts.get((protocol, vip, port), 0)

    def delete_flows(self, flows: FlowMatch) -> int:
        self.deleted_flows.append(flows)
        return 0


class RecordingVipHolder(VipHolder):
    def __init__(self) -> None:
        self.held: set[str] = set()

    def hold(self, vip: str) -> None:
        self.held.add(vip)

    def release(self, vip: str) -> None:
        self.held.discard(vip)


class RecordingVipAnnouncer(VipAnnouncer):
    def __init__(self) -> None:
        self.announced: list[frozenset[str]] = []  # every set given, in order

    def announce(self, vips: frozenset[str]) -> None:
        self.announced.append(vips)


class RecordingDsrRouter(DsrRouter):
    def __init__(self) -> None:
        self.applied: list[tuple[L4Service, ...]] = []  # every set of services given, in order

    def apply(self, services: Sequence[L4Service]) -> None:
        self.applied.append(tuple(services))
