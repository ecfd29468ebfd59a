"""The lab tier's leases over the network: an engine on the fabric, a lease process per node.

Real hosts share no file, so the tier's nodes share their leases over the network, as
on real hosts (issue 29.2), never through a file of the machine the lab runs on. This
starts etcd (Debian's ``etcd-server``) in ``<lab>-ctl``, listening on the control host's
fabric address, tuned (``--election-timeout 100``) so a lease may be as short as one
second, with its data in the control host's own directory; and on node ``hN`` the
process ``lbaas.tier.node_lease`` with a settings file of the node's own naming that etcd,
fencing through the node's BIRD. Both are registered with the lab (etcd as ``ctl``, the
lease process as ``hN``: ``host-down`` kills it). A lab with several control hosts keeps
the leases in its database host's PostgreSQL instead (``tier_engine``), the engine its
control plane already coordinates on, which no control host's loss takes away.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterable

from lbaas.lab import processes
from lbaas.lab.addresses import CONTROL_HOST, FIRST_HOST, address, bare
from lbaas.lab.base import LabError
from lbaas.lab.database_host import database_url
from lbaas.lab.lab import Lab
from lbaas.lab.services import tier_node_files, toml_text
from lbaas.private_files import make_private_directory, write_private
from lbaas.tier.lease import LeasePolicy

ETCD_CLIENT_PORT = 2379
#: Where a node's lease process answers the watcher's health checks, on the fabric.
HEALTH_PORT = 9180
_START_TIMEOUT = 60.0


def _fabric(lab: Lab, host: int) -> str:
    return bare(address(lab.state().networks["fab"], host))


def etcd_url(lab: Lab) -> str:
    return f"http://{_fabric(lab, CONTROL_HOST)}:{ETCD_CLIENT_PORT}"


def start_etcd(lab: Lab) -> str:
    """Start etcd in the control host; its client URL once it listens."""
    binary = shutil.which("etcd")
    if binary is None:
        raise LabError("etcd is not installed (Debian: apt-get install etcd-server)")
    directory = lab.services_dir / "ctl" / "etcd"
    make_private_directory(directory)
    client, peer = etcd_url(lab), "http://127.0.0.1:2380"
    argv = [binary, "--name", "ctl", "--data-dir", str(directory / "data")]
    argv += ["--listen-client-urls", client, "--advertise-client-urls", client]
    argv += ["--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer]
    argv += ["--initial-cluster", f"ctl={peer}"]
    argv += ["--heartbeat-interval", "10", "--election-timeout", "100"]
    log = directory / "etcd.log"
    pid = processes.start(lab.names.control, argv, log, directory)
    lab.register_process("ctl", pid)
    host = _fabric(lab, CONTROL_HOST)
    processes.wait_listening(lab.names.control, host, ETCD_CLIENT_PORT, log, _START_TIMEOUT)
    return client


def start_node_lease(
    lab: Lab,
    index: int,
    policy: LeasePolicy,
    url: str,
    engine: str = "etcd",
    tier: Iterable[int] = (),
) -> int:
    """Start node ``hN``'s lease process (renewing over the fabric, fencing its BIRD) on
    the engine at ``url`` (etcd, or the database host's PostgreSQL). ``tier``: every tier
    node's index, whose health ports witness an engine outage (``peer_witness``)."""
    node = f"h{index}"
    bird_socket = tier_node_files(lab.services_dir, index)[0]
    directory = bird_socket.parent
    make_private_directory(directory)
    settings = directory / "lease.toml"
    tree = {
        "state_dir": str(directory),
        "coordination": {"engine": engine, "url": url, "timeout": policy.renew_interval},
        "tier": {
            "lease_renew_interval": policy.renew_interval,
            "lease_missed_renewals": policy.missed_renewals,
            "nodes": {f"h{i}": f"{_fabric(lab, FIRST_HOST + i)}:{HEALTH_PORT}" for i in tier},
        },
    }
    write_private(settings, toml_text(tree))
    fabric = _fabric(lab, FIRST_HOST + index)
    argv = [sys.executable, "-m", "lbaas.tier.node_lease", node, fabric, str(HEALTH_PORT)]
    argv.append(str(bird_socket))
    log = directory / "lease.log"
    env = {"LBAAS_CONFIG": str(settings)}
    pid = processes.start(lab.names.host(index), argv, log, directory, env)
    lab.register_process(node, pid)
    namespace = lab.names.host(index)
    processes.wait_listening(namespace, fabric, HEALTH_PORT, log, _START_TIMEOUT)
    return pid


def tier_engine(lab: Lab) -> tuple[str, str]:
    """The engine the lab's tier leases live on, started if need be: (engine, url)."""
    if lab.state().control > 1:
        return "postgresql", database_url(lab)
    return "etcd", start_etcd(lab)
