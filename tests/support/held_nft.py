"""A recording NftOps whose kernel already holds load balancers, as full loads left them:
what a restarted engine finds (``L4Engine.adopt_many``)."""

from __future__ import annotations

from lbaas.l4 import nft
from lbaas.l4.host.recording import RecordingNftOps
from lbaas.l4.service import L4Service


def kernel_holding(*services: L4Service) -> RecordingNftOps:
    """Rules, slot maps, ``dispatch`` and ``entry_vips`` as a full load of each left them."""
    ops = RecordingNftOps()
    ops.comments = {}
    entry = []
    for held in services:
        tables = {li.name: li.table() for li in held.listeners}
        ops.comments[nft.chain_name(held.lb_id)] = nft.rule_comments(held, tables)
        flows = {}
        for li in held.listeners:
            values: list[str | None] = list(nft.slot_values(li, tables[li.name]))
            ops.slot_maps[nft.map_name(held.lb_id, li.name)] = values
            flows[li.name] = 0
        ops.set_flows(nft.chain_name(held.lb_id), held.vip, flows)
        entry += [held.vip] if held.entry else []
    ops.listings[("set", "ip", nft.TABLE, "entry_vips")] = {
        "nftables": [{"set": {"name": "entry_vips", "elem": entry}}]
    }
    return ops
