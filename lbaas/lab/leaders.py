"""Who leads each singleton loop of a lab with several control hosts.

The leaders are the live ``leader/<loop>`` leases on the lab's PostgreSQL, which only the
lab's network reaches: ``leaders`` runs this module (``python -m lbaas.lab.leaders URL``)
in the database host's namespace and maps each holder (``<hostname>:<pid>:<tag>``, the
hostname the same in every namespace) to the control host whose registered process that
pid is (``tier-watch`` for the tier's watcher). A lease whose pid the lab did not start
shows as ``unknown``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from lbaas.coordination.postgres import PostgresCoordinator
from lbaas.lab import processes
from lbaas.lab.database_host import database_url
from lbaas.lab.lab import Lab

PREFIX = "leader/"


def leaders(lab: Lab) -> dict[str, dict[str, Any]]:
    """loop -> {"host": ctl|ctl2…|tier-watch|unknown, "pid", "remaining_s"} per live leader."""
    state = lab.state()
    argv = [sys.executable, "-m", "lbaas.lab.leaders", database_url(lab)]
    leases = json.loads(processes.output_of(lab.names.database, argv))
    owners = {p.pid: owner for owner, started in state.processes.items() for p in started}
    shown: dict[str, dict[str, Any]] = {}
    for lease in leases:
        pid = _pid(lease["holder"])
        shown[lease["name"].removeprefix(PREFIX)] = {
            "host": owners.get(pid, "unknown"),
            "pid": pid,
            "remaining_s": round(lease["remaining"], 2),
        }
    return shown


def _pid(holder: str) -> int:
    parts = holder.split(":")
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else 0


def main(url: str) -> int:
    coordinator = PostgresCoordinator(url, timeout=5.0)
    try:
        live = coordinator.live(PREFIX)
    finally:
        coordinator.close()
    rows = [{"name": x.name, "holder": x.holder, "remaining": x.remaining} for x in live]
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
