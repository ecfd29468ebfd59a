"""A libnftables session that keeps the texts it loaded, for the L4 e2e tests: none for
what went to the kernel as netlink steps, one per load balancer added alone, the whole
table for a full load."""

from __future__ import annotations

from lbaas.l4.host.lib_ops import LibNftOps


class RecordedLibNftOps(LibNftOps):
    """``LibNftOps`` in ``namespace`` that appends every text it loaded to ``loaded``."""

    def __init__(self, namespace: str) -> None:
        super().__init__(namespace)
        self.loaded: list[str] = []

    def load(self, ruleset: str) -> None:
        super().load(ruleset)
        self.loaded.append(ruleset)
