"""Spare amphora slots for real (root): a create takes a prepared HAProxy and only reloads it.

A registry in netns mode with a pool of one spare (real namespaces, real HAProxy): the
amphora's first PUT takes the spare (same master pid, its namespace renamed to the
amphora's, no second master started), serves a backend in a namespace of the test through
the VIP to a client namespace, and the pool is refilled with a new slot. A second pool
over the same directory (the next agent) discards a spare a killed agent left but leaves
the amphora serving; deleting the amphora and closing the pools leaves no namespace,
process or file behind. A spare's first configuration is not checked with ``haproxy -c``
before its reload (the reload is the check); a refused one is still a 422, and the
spare's master lives on to load the corrected one.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from agent_e2e_support import Server, haproxy_config
from scratch_net import BACKEND_PORT, ScratchNet

from lbaas.amphora.plumbing import bridge_name, namespace_name
from lbaas.amphora.registry import AmphoraRegistry
from lbaas.amphora.spare_slot import SPARES_DIRECTORY, SpareSlots
from lbaas.amphora.spares import SparePool
from lbaas.errors import InvalidRenderedConfig
from lbaas.host.real import RealHostOps
from lbaas.wire.amphora import AmphoraSpec, NetworkSpec, VipSpec
from tests.e2e.amphora.serve_process import process_alive
from tests.support.scratch_subnets import pick_subnets
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]
PORT = 8080
FETCH = (
    "import sys, urllib.request;"
    "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"
)


@dataclass
class SpareWorld:
    """A registry in netns mode with a pool of one spare, on a subnet of the test."""

    host: RealHostOps
    testnet: ScratchNet
    root: Path
    prefix: str
    subnet: str
    pool: SparePool
    registry: AmphoraRegistry

    @property
    def vip(self) -> str:
        return f"{self.subnet}.10"

    @property
    def vip_net(self) -> str:
        return f"vip-{self.testnet.tag}"

    @property
    def amphora_id(self) -> str:
        return f"amp-{self.testnet.tag}"

    def slots(self) -> SpareSlots:
        return SpareSlots(self.root, self.host, self.prefix)

    def spec(self, backend: Server, *frontend_lines: str) -> AmphoraSpec:
        return AmphoraSpec(
            version=1,
            loadbalancer_id="lb-spares",
            **haproxy_config(
                self.root / self.amphora_id,
                self.vip,
                PORT,
                [backend],
                frontend_lines=frontend_lines,
            ),
            vip=VipSpec(
                address=self.vip, subnet_cidr=f"{self.subnet}.0/24", network_id=self.vip_net
            ),
            network=NetworkSpec(vip_host_address=f"{self.subnet}.1"),
        )


@pytest.fixture
def world(host: RealHostOps, testnet: ScratchNet, short_dir: Path) -> Iterator[SpareWorld]:
    """Everything removed after, even on failure: amphorae, spares, leftovers, bridge."""
    prefix, root = f"lbt{testnet.tag}-", short_dir / "amphorae"
    pool = SparePool(SpareSlots(root, host, prefix), 1)
    registry = AmphoraRegistry(root, host, mode="netns", namespace_prefix=prefix, spares=pool)
    (net,) = pick_subnets(1)
    subnet = str(net.network_address).rsplit(".", 1)[0]
    world = SpareWorld(host, testnet, root, prefix, subnet, pool, registry)
    try:
        yield world
    finally:
        testnet.remove(host)
        for leftover in registry.amphora_ids():
            registry.delete(leftover)
        pool.close()
        SparePool(world.slots(), 0).recover()
        host.delete_link(bridge_name(world.vip_net))


def test_a_create_takes_a_spare_and_the_pool_refills(world: SpareWorld, short_dir: Path) -> None:
    host, pool, registry, root = world.host, world.pool, world.registry, world.root
    amphora_id, vip_net = world.amphora_id, world.vip_net
    backend = Server("m1", f"{world.subnet}.30", BACKEND_PORT)
    pool.start()
    wait_until(lambda: pool.ready_count() == 1, 60, "the spare prepared")
    (spare,) = pool.status().ready
    status = registry.put(amphora_id, world.spec(backend))

    assert status.master_pid == spare.master_pid  # the spare's master, reloaded
    assert status.last_outcome == "RELOADED" and status.restarts == 0
    assert status.namespace == namespace_name(amphora_id, world.prefix)
    assert not host.namespace_exists(spare.namespace)
    assert pool.status().taken == 1
    wait_until(lambda: pool.ready_count() == 1, 60, "the pool refilled")
    (refill,) = pool.status().ready
    assert refill.name != spare.name and refill.master_pid != spare.master_pid

    backend_ns = world.testnet.plug(host, "b1", bridge_name(vip_net), f"{backend.address}/24")
    world.testnet.serve(backend_ns, backend.address, "backend-b1", short_dir)
    client_ns = world.testnet.plug(host, "cl", bridge_name(vip_net), f"{world.subnet}.20/24")
    url = f"http://{world.vip}:{PORT}/"

    def served() -> bool:
        done = host.run_in_namespace(client_ns, [sys.executable, "-c", FETCH, url])
        return done.returncode == 0 and done.stdout.strip() == "backend-b1"

    wait_until(served, 60, "the backend through the VIP")

    # A clean stop discards the ready spare; a killed agent leaves one, which the
    # next agent discards at start, leaving the amphora (made from a spare) alone.
    pool.close()
    later = SparePool(world.slots(), 1)
    assert later.recover() == 0
    slot = world.slots().prepare()  # what a killed agent leaves
    assert later.recover() == 1
    assert not host.namespace_exists(slot.namespace) and not process_alive(slot.master_pid)
    assert registry.get(amphora_id) is not None and served()

    registry.delete(amphora_id)
    assert not host.namespace_exists(status.namespace)
    assert status.master_pid is not None and not process_alive(status.master_pid)
    assert not (root / amphora_id).exists() and not (root / amphora_id).is_symlink()
    assert list((root / SPARES_DIRECTORY).iterdir()) == []


def test_a_spare_given_a_refused_configuration_answers_422_and_keeps_its_master(
    world: SpareWorld,
) -> None:
    backend = Server("m1", f"{world.subnet}.30", BACKEND_PORT)
    world.pool.fill()
    (spare,) = world.pool.status().ready
    with pytest.raises(InvalidRenderedConfig):
        world.registry.put(world.amphora_id, world.spec(backend, "no-such-keyword here"))
    assert process_alive(spare.master_pid)
    status = world.registry.put(world.amphora_id, world.spec(backend))
    assert status.running and status.master_pid == spare.master_pid
    assert status.last_outcome == "RELOADED"
    socket.create_connection((world.vip, PORT), timeout=5).close()  # the VIP is listened on
