"""An NftOps that runs nothing: it keeps what it was asked to do, for unit tests."""

from __future__ import annotations

from typing import Any

from lbaas.l4.host.base import FlowMatch, NftOps


class RecordingNftOps(NftOps):
    def __init__(self) -> None:
        self.checked: list[str] = []
        self.loaded: list[str] = []
        self.deleted_flows: list[FlowMatch] = []
        # What list_chain_json answers, set by the test.
        self.chains: dict[tuple[str, str], dict[str, Any]] = {}

    def check(self, ruleset: str) -> None:
        self.checked.append(ruleset)

    def load(self, ruleset: str) -> None:
        self.loaded.append(ruleset)

    def list_table(self, name: str) -> str | None:
        return None

    def list_chain_json(self, table: str, chain: str) -> dict[str, Any] | None:
        return self.chains.get((table, chain))

    def delete_flows(self, flows: FlowMatch) -> int:
        self.deleted_flows.append(flows)
        return 0
