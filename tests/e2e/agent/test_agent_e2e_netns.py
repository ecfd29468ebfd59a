"""Netns mode for real: an amphora namespace between client and backend namespaces.

Needs root. The test builds two backend namespaces on the member network's bridge and a
client namespace on the VIP network's bridge, checks that traffic reaches both backends
through the VIP (from the client namespace and from the host), then deletes everything and
checks that no namespace, link or process of the amphora is left.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agent_e2e_support import Server, haproxy_config, http_get
from scratch_net import BACKEND_PORT, ScratchNet

from lbaas.amphora.plumbing import bridge_name, namespace_name, plan_plumbing
from lbaas.amphora.registry import AmphoraRegistry
from lbaas.host.real import RealHostOps
from lbaas.wire.amphora import AmphoraSpec, MemberNetwork, NetworkSpec, VipSpec
from tests.support.scratch_subnets import pick_subnets
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]
PORT = 8080
FETCH = (
    "import sys, urllib.request;"
    "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"
)


def _prefixes(count: int) -> list[str]:
    """``count`` free 10.x.y.0/24 networks, as their "10.x.y" prefixes."""
    return [str(net.network_address).rsplit(".", 1)[0] for net in pick_subnets(count)]


def test_traffic_through_an_amphora_namespace_and_clean_delete(
    host: RealHostOps, testnet: ScratchNet, short_dir: Path
) -> None:
    vip_net, member_net = f"vip-{testnet.tag}", f"members-{testnet.tag}"
    vip_prefix, member_prefix = _prefixes(2)
    amphora_id = f"amp-{testnet.tag}"
    manager = AmphoraRegistry(short_dir / "amphorae", host, mode="netns")
    vip = f"{vip_prefix}.10"
    servers = [
        Server("m1", f"{member_prefix}.11", BACKEND_PORT),
        Server("m2", f"{member_prefix}.12", BACKEND_PORT),
    ]
    spec = AmphoraSpec(
        version=1,
        loadbalancer_id="lb-netns",
        **haproxy_config(manager.root / amphora_id, vip, PORT, servers),
        vip=VipSpec(address=vip, subnet_cidr=f"{vip_prefix}.0/24", network_id=vip_net),
        network=NetworkSpec(
            vip_host_address=f"{vip_prefix}.1",
            member_networks=(
                MemberNetwork(
                    network_id=member_net,
                    subnet_cidr=f"{member_prefix}.0/24",
                    address=f"{member_prefix}.10",
                ),
            ),
        ),
    )
    plan = plan_plumbing(amphora_id, spec)
    try:
        status = manager.put(amphora_id, spec)
        assert status.running and status.namespace == namespace_name(amphora_id)
        assert host.namespace_exists(plan.namespace)
        again = manager.put(amphora_id, spec)
        assert again.last_outcome == "UNCHANGED" and again.master_pid == status.master_pid

        for role, server in zip(("b1", "b2"), servers, strict=True):
            namespace = testnet.plug(host, role, bridge_name(member_net), f"{server.address}/24")
            testnet.serve(namespace, server.address, f"backend-{role}", short_dir)
        client_ns = testnet.plug(host, "cl", bridge_name(vip_net), f"{vip_prefix}.20/24")

        seen: set[str] = set()

        def fetch_from_client() -> bool:
            result = host.run_in_namespace(
                client_ns, [sys.executable, "-c", FETCH, f"http://{vip}:{PORT}/"], timeout=20
            )
            if result.returncode == 0:
                seen.add(result.stdout.strip())
            return seen == {"backend-b1", "backend-b2"}

        wait_until(fetch_from_client, timeout=60, what="both backends through the VIP")
        assert http_get(vip, PORT) in ("backend-b1", "backend-b2")  # from the host, too

        master_pid = status.master_pid
        testnet.remove(host)
        manager.delete(amphora_id)
        assert not host.namespace_exists(plan.namespace)
        for leg in plan.legs:
            assert not host.link_exists(leg.host_end)
            assert not host.link_exists(leg.bridge)
        assert master_pid is not None and not _alive(master_pid)
        assert not (manager.root / amphora_id).exists()
    finally:
        testnet.remove(host)
        manager.delete(amphora_id)
        for leg in plan.legs:
            host.delete_link(leg.bridge)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
