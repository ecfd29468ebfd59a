"""Spare amphora slots for real (root): a create takes a prepared HAProxy and only reloads it.

A registry in netns mode with a pool of one spare (real namespaces, real HAProxy): the
amphora's first PUT takes the spare (same master pid, its namespace renamed to the
amphora's, no second master started), serves a backend in a namespace of the test through
the VIP to a client namespace, and the pool is refilled with a new slot. A second pool
over the same directory (the next agent) discards a spare a killed agent left but leaves
the amphora serving; deleting the amphora and closing the pools leaves no namespace,
process or file behind.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from agent_e2e_support import Server, haproxy_config
from scratch_net import BACKEND_PORT, ScratchNet

from lbaas.amphora.plumbing import bridge_name, namespace_name
from lbaas.amphora.registry import AmphoraRegistry
from lbaas.amphora.spare_slot import SPARES_DIRECTORY, SpareSlots
from lbaas.amphora.spares import SparePool
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


def test_a_create_takes_a_spare_and_the_pool_refills(
    host: RealHostOps, testnet: ScratchNet, short_dir: Path
) -> None:
    prefix = f"lbt{testnet.tag}-"
    root = short_dir / "amphorae"
    pool = SparePool(SpareSlots(root, host, prefix), 1)
    later = SparePool(SpareSlots(root, host, prefix), 1)
    registry = AmphoraRegistry(root, host, mode="netns", namespace_prefix=prefix, spares=pool)
    (net,) = pick_subnets(1)
    subnet = str(net.network_address).rsplit(".", 1)[0]
    vip, vip_net, amphora_id = f"{subnet}.10", f"vip-{testnet.tag}", f"amp-{testnet.tag}"
    backend = Server("m1", f"{subnet}.30", BACKEND_PORT)
    spec = AmphoraSpec(
        version=1,
        loadbalancer_id="lb-spares",
        **haproxy_config(root / amphora_id, vip, PORT, [backend]),
        vip=VipSpec(address=vip, subnet_cidr=f"{subnet}.0/24", network_id=vip_net),
        network=NetworkSpec(vip_host_address=f"{subnet}.1"),
    )
    try:
        pool.start()
        wait_until(lambda: pool.ready_count() == 1, 60, "the spare prepared")
        (spare,) = pool.status().ready
        status = registry.put(amphora_id, spec)

        assert status.master_pid == spare.master_pid  # the spare's master, reloaded
        assert status.last_outcome == "RELOADED" and status.restarts == 0
        assert status.namespace == namespace_name(amphora_id, prefix)
        assert not host.namespace_exists(spare.namespace)
        assert pool.status().taken == 1
        wait_until(lambda: pool.ready_count() == 1, 60, "the pool refilled")
        (refill,) = pool.status().ready
        assert refill.name != spare.name and refill.master_pid != spare.master_pid

        backend_ns = testnet.plug(host, "b1", bridge_name(vip_net), f"{backend.address}/24")
        testnet.serve(backend_ns, backend.address, "backend-b1", short_dir)
        client_ns = testnet.plug(host, "cl", bridge_name(vip_net), f"{subnet}.20/24")
        url = f"http://{vip}:{PORT}/"

        def served() -> bool:
            done = host.run_in_namespace(client_ns, [sys.executable, "-c", FETCH, url])
            return done.returncode == 0 and done.stdout.strip() == "backend-b1"

        wait_until(served, 60, "the backend through the VIP")

        # A clean stop discards the ready spare; a killed agent leaves one, which the
        # next agent discards at start, leaving the amphora (made from a spare) alone.
        pool.close()
        assert later.recover() == 0
        slot = SpareSlots(root, host, prefix).prepare()  # what a killed agent leaves
        assert later.recover() == 1
        assert not host.namespace_exists(slot.namespace) and not process_alive(slot.master_pid)
        assert registry.get(amphora_id) is not None and served()

        registry.delete(amphora_id)
        assert not host.namespace_exists(status.namespace)
        assert status.master_pid is not None and not process_alive(status.master_pid)
        assert not (root / amphora_id).exists() and not (root / amphora_id).is_symlink()
        assert list((root / SPARES_DIRECTORY).iterdir()) == []
    finally:
        testnet.remove(host)
        for leftover in registry.amphora_ids():
            registry.delete(leftover)
        pool.close()
        later.close()
        SparePool(SpareSlots(root, host, prefix), 0).recover()
        host.delete_link(bridge_name(vip_net))
