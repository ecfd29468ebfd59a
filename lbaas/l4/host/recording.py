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
        self.rule_listings = 0  # how many times list_rules_json was called
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

    def list_rules_json(self) -> dict[str, Any] | None:
        """The chains set by the test, each rule tagged with its table and chain as
        ``nft -j`` tags them."""
        self.rule_listings += 1
        items: list[Any] = []
        for (table, chain), listing in self.chains.items():
            for item in listing.get("nftables", []):
                if "rule" in item:
                    items.append({"rule": {**item["rule"], "table": table, "chain": chain}})
        return {"nftables": items}

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
