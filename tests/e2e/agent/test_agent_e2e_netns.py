"""Netns mode for real: an amphora namespace between client and backend namespaces.

Needs root. The test builds two backend namespaces on the member network's bridge and a
client namespace on the VIP network's bridge, checks that traffic reaches both backends
through the VIP (from the client namespace and from the host), then deletes everything and
checks that no namespace, link or process of the amphora is left.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from agent_e2e_support import Server, haproxy_config, http_get

from lbaas.agent.amphora import AmphoraManager
from lbaas.agent.host.real import RealHostOps
from lbaas.agent.plumbing import bridge_name, namespace_name, plan_plumbing
from lbaas.agent.wire import AmphoraSpec, MemberNetwork, NetworkSpec, VipSpec
from tests.support.scratch_subnets import pick_subnets
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]
PORT = 8080
BACKEND_PORT = 8000
FETCH = (
    "import sys, urllib.request;"
    "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"
)


@dataclass
class ScratchNet:
    """What the test itself creates, so that it can always remove it."""

    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:5])
    namespaces: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def plug(self, host: RealHostOps, role: str, bridge: str, address: str) -> str:
        namespace = f"lbt-{self.tag}-{role}"
        outer, inner = f"lbt{self.tag}{role}h", f"lbt{self.tag}{role}n"
        host.create_namespace(namespace)
        self.namespaces.append(namespace)
        host.create_veth_pair(outer, inner)
        host.move_to_namespace(inner, namespace)
        host.attach_to_bridge(outer, bridge)
        host.set_link_up(outer)
        host.set_link_up(inner, namespace)
        host.add_address(inner, address, namespace)
        return namespace

    def serve(self, namespace: str, address: str, name: str, root: Path) -> None:
        docroot = root / name
        docroot.mkdir()
        (docroot / "index.html").write_text(name)
        argv = ["ip", "netns", "exec", namespace, sys.executable, "-m", "http.server"]
        argv += [str(BACKEND_PORT), "--bind", address, "--directory", str(docroot)]
        self.processes.append(
            subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )

    def remove(self, host: RealHostOps) -> None:
        for process in self.processes:
            process.kill()
            process.wait(10)
        self.processes.clear()
        for namespace in self.namespaces:
            host.delete_namespace(namespace)
        self.namespaces.clear()


@pytest.fixture
def host() -> RealHostOps:
    if os.geteuid() != 0:
        pytest.skip("netns mode needs root")
    return RealHostOps()


@pytest.fixture
def testnet(host: RealHostOps) -> Iterator[ScratchNet]:
    net = ScratchNet()
    try:
        yield net
    finally:
        net.remove(host)


def _prefixes(count: int) -> list[str]:
    """``count`` free 10.x.y.0/24 networks, as their "10.x.y" prefixes."""
    return [str(net.network_address).rsplit(".", 1)[0] for net in pick_subnets(count)]


def test_traffic_through_an_amphora_namespace_and_clean_delete(
    host: RealHostOps, testnet: ScratchNet, short_dir: Path
) -> None:
    vip_net, member_net = f"vip-{testnet.tag}", f"members-{testnet.tag}"
    vip_prefix, member_prefix = _prefixes(2)
    amphora_id = f"amp-{testnet.tag}"
    manager = AmphoraManager(short_dir / "amphorae", host, mode="netns")
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
