"""The lab tier's lease watcher: ``lbaas tier watch`` in the router's namespace.

``lbaas lab up --tier K`` starts it after the nodes' lease processes, registered with the lab
as ``tier-watch`` (``down`` kills it; ``host-down`` of a node does not). It reads a settings
file written here, ``<services_dir>/tier/watch/watch.toml`` (``watch/`` is the router host's
own directory, with the watcher's state and log: ``Lab.host_files``): the nodes' health
ports on the fabric,
the coordination engine holding their leases (reached over the fabric, as the nodes reach
it: no file is shared), the router BIRD's control socket, the lease timings the ``lbaas lab``
command was given, and ``/metrics`` on the router's fabric address (port ``METRICS_PORT``),
so a scraper in the control namespace reaches it over the fabric.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lbaas.config import TierSettings
from lbaas.lab import processes
from lbaas.lab.addresses import FIRST_HOST, ROUTER_HOST, address, bare
from lbaas.lab.lab import Lab
from lbaas.lab.services import toml_text
from lbaas.lab.tier import ROUTER, node_protocol
from lbaas.lab.tier_coordination import HEALTH_PORT
from lbaas.lab.tier_status import watch_directory, watch_settings_file
from lbaas.private_files import make_private_directory, write_private

OWNER = "tier-watch"
METRICS_PORT = 9181
_START_TIMEOUT = 30.0


def watch_settings(
    lab: Lab, nodes: range, tier: TierSettings, engine: tuple[str, str]
) -> dict[str, object]:
    """The watcher's settings: the nodes' leases on ``engine`` (name, URL), over the fabric."""
    fabric = lab.state().networks["fab"]
    name, url = engine
    return {
        "state_dir": str(watch_directory(lab) / "state"),  # not ./state in its working directory
        "tier": {
            "lease_renew_interval": tier.lease_renew_interval,
            "lease_missed_renewals": tier.lease_missed_renewals,
            "lease_store_timeout": tier.lease_store_timeout,
            "health_check_tries": tier.health_check_tries,
            "health_check_timeout": tier.health_check_timeout,
            "nodes": {
                node_protocol(i): f"{bare(address(fabric, FIRST_HOST + i))}:{HEALTH_PORT}"
                for i in nodes
            },
            "router_bird_socket": str(lab.services_dir / "tier" / ROUTER / "bird.ctl"),
            "metrics_host": metrics_host(lab),
            "metrics_port": METRICS_PORT,
        },
        "coordination": {"engine": name, "url": url, "timeout": tier.lease_renew_interval},
    }


def metrics_host(lab: Lab) -> str:
    return bare(address(lab.state().networks["fab"], ROUTER_HOST))


def start_watch(lab: Lab, nodes: range, tier: TierSettings, engine: tuple[str, str]) -> int:
    """Start the watcher and wait for its /metrics; its pid."""
    directory = watch_directory(lab)
    make_private_directory(directory)
    config = watch_settings_file(lab)
    write_private(config, toml_text(watch_settings(lab, nodes, tier, engine)))
    argv = [sys.executable, "-m", "lbaas.cli", "--config", str(config), "tier", "watch"]
    log = directory / "watch.log"
    pid = processes.start(lab.names.router, argv, log, directory)
    lab.register_process(OWNER, pid)
    processes.wait_listening(lab.names.router, metrics_host(lab), METRICS_PORT, log, _START_TIMEOUT)
    return pid


def watch_log(lab: Lab) -> Path:
    return watch_directory(lab) / "watch.log"
