"""A restarted node agent's restore (``L4NodeManager.restore``) over a kernel that holds its
load balancers already: nothing loaded again but the shared part, a drifted map's slots
rewritten, the entry VIPs held in one call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lbaas.l4 import nft
from lbaas.l4.engine import L4Engine
from lbaas.l4.health.base import Prober
from lbaas.l4.health.checker import HealthChecker
from lbaas.l4.health.monitor import Target
from lbaas.l4.host.base import VipHolder
from lbaas.l4node.manager import L4NodeManager, l4_service
from lbaas.wire.l4 import L4ListenerSpec, L4MemberSpec, L4ServiceSpec
from tests.support.held_nft import kernel_holding


class NeverProbes(Prober):
    async def probe(self, target: Target) -> bool:
        raise AssertionError("the checker is not started in these tests")


class CountingVipHolder(VipHolder):
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def hold(self, vip: str) -> None:
        self.calls.append([vip])

    def hold_many(self, vips: Sequence[str]) -> None:
        self.calls.append(list(vips))

    def release(self, vip: str) -> None:
        raise AssertionError("nothing is released on a restore")


def spec(index: int) -> L4ServiceSpec:
    members = tuple(
        L4MemberSpec(id=f"m{index}-{k}", address=f"10.77.{index}.{k}", port=80, weight=1)
        for k in (1, 2)
    )
    listener = L4ListenerSpec(
        id=f"l{index}",
        protocol="tcp",
        port=80,
        hash_key="five_tuple",
        table_size=61,
        members=members,
    )
    return L4ServiceSpec(
        version=3,
        loadbalancer_id=f"{index:08x}-0000-4000-8000-000000000000",
        vip=f"10.78.0.{index + 1}",
        listeners=(listener,),
        entry=index != 1,
    )


def test_a_restore_keeps_what_the_kernel_holds_and_holds_the_entry_vips_at_once(
    tmp_path: Path,
) -> None:
    specs = [spec(n) for n in range(3)]
    root = tmp_path / "l4"
    root.mkdir()
    for each in specs:
        (root / f"{each.loadbalancer_id}.json").write_text(each.model_dump_json())
    ops = kernel_holding(*(l4_service(each, {}) for each in specs))
    drifted = nft.map_name(specs[2].loadbalancer_id, "tcp_80")
    ops.slot_maps[drifted][7] = "10.9.9.9 . 9"
    vips = CountingVipHolder()
    checker = HealthChecker(NeverProbes(), lambda changes: None)
    manager = L4NodeManager(root, L4Engine(ops), checker, vips)
    assert manager.restore() == sorted(each.loadbalancer_id for each in specs)
    base, repair = ops.loaded
    assert base.startswith("add table ip lbaas") and repair.startswith(
        f"delete element ip lbaas {drifted} {{ 7 }}"
    )
    assert vips.calls == [["10.78.0.1", "10.78.0.3"]]
    for each in specs:
        status = manager.get(each.loadbalancer_id)
        assert status is not None and status.last_error is None and status.applied_version == 3
