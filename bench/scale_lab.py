"""The lab of ``bench/scale.py --lab``: three control hosts on PostgreSQL, three agent hosts.

``scale_lab`` (the outer run, in the machine's namespace) builds the lab with
``tests.support.lab_pair.lab_world`` (``lbaas lab up --hosts 3 --control 3`` and its
services, every host UP, an ACTIVE_STANDBY flavor), its VIP network a /18 so that 10,000
VIPs fit (``--vip-prefix``; a /24 holds some 240), and starts one backend process in the
router's namespace answering on the router's member-network address, ports 8000 and 8001:
every pool's two members. ``down`` removes everything at the end, on failure and ^C too.

``LabScaleWorld`` (the inner run, in the lab's client namespace, where the API clients
are) is what ``bench/scale.py`` measures, with the methods of ``scale_world.ScaleWorld``:
``start_serve``/``stop_serve`` start and stop every control host's api, worker and health
(the agents keep running: a controller restart), ``start_serve(resync_interval=1)``
rewriting each control host's settings first; memory, CPU and HAProxies per host are read
from ``/proc`` by network namespace (an amphora's processes run in its namespace,
``<lab>-hN-amp-…``). ``restart_agent`` SIGKILLs the agent of the host holding the most
amphorae and starts it again: the new agent adopts every amphora and restores its L4
services before it logs that it serves, so the seconds until that line are the
adoption's (its port accepts sooner: it is bound before the imports).
The database is read over its Unix socket (``/run/lbaas-lab-db/<lab>``, the database
host's data directory), which the client namespace reaches as the machine's files.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from scale_load import Shape
from scale_pg import Db, Server
from scale_world import BACKEND, cpu_seconds, processes, rss_mb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lbaas.lab.addresses import ROUTER_HOST, address, bare  # noqa: E402
from lbaas.lab.database_host import DATABASE, PORT, USER  # noqa: E402
from lbaas.lab.lab import Lab  # noqa: E402
from lbaas.lab.names import control_name  # noqa: E402
from lbaas.lab.services import (  # noqa: E402
    AGENT_PART,
    CONTROL_PARTS,
    SETTINGS_FILE,
    control_dir,
    restart_agent,
    services_status,
    start_control_part,
    toml_text,
)
from lbaas.private_files import write_private  # noqa: E402
from tests.support.lab_pair import LabWorld, lab_world  # noqa: E402

VIP_PREFIX = 18
MEMBER_PORTS = (8000, 8001)
STOP_GRACE = 30.0
#: What an agent logs once it serves, its amphorae adopted (``AgentService.start``).
SERVING = "lbaas.fleet.agent_service: agent (netns mode) listening on"


@contextlib.contextmanager
def scale_lab(directory: Path, hosts: int, control: int) -> Iterator[LabWorld]:
    """The lab with its backend up; removed at the end whatever happens."""
    try:
        with lab_world(
            directory, hosts=hosts, prefix="sc", control=control, vip_prefix=VIP_PREFIX
        ) as world:
            argv = [sys.executable, "-c", BACKEND, *map(str, MEMBER_PORTS)]
            backend = subprocess.Popen(
                ["ip", "netns", "exec", world.lab.names.router, *argv],
                stdout=subprocess.PIPE,
                text=True,
            )
            try:
                assert backend.stdout is not None and backend.stdout.readline() == "ready\n"
                yield world
            finally:
                backend.kill()
                backend.wait()
    finally:
        # Seen once: the HAProxies an agent started after its restart outlived ``down``.
        leftover = [p for p, _, cmd in processes() if str(directory) in cmd and p != os.getpid()]
        for pid in leftover:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if leftover:
            print(f"killed {len(leftover)} processes left after the lab's down", file=sys.stderr)


def lab_shape(lab: Lab, flavor: str, standby: frozenset[int]) -> Shape:
    services = services_status(lab)
    router = bare(address(lab.state().networks["m0"], ROUTER_HOST))
    return Shape(
        vip_subnet=services["vip_subnet_id"],
        members=tuple((router, port) for port in MEMBER_PORTS),
        member_subnet=services["member_subnet_ids"]["m0"],
        standby_flavor=flavor,
        standby=standby,
    )


def lab_database(lab: Lab) -> Db:
    return Db(Server(str(lab.names.database_dir), PORT, user=USER), DATABASE)


def _namespace_inodes() -> dict[int, str]:
    found = {}
    for name in os.listdir("/run/netns"):
        with contextlib.suppress(OSError):
            found[os.stat(f"/run/netns/{name}").st_ino] = name
    return found


def _by_namespace() -> dict[str, list[tuple[int, str]]]:
    """(pid, command name) of every process, by the name of its network namespace."""
    names = _namespace_inodes()
    found: dict[str, list[tuple[int, str]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError):
            inode = int(os.readlink(entry / "ns" / "net").split("[", 1)[1].rstrip("]"))
            comm = (entry / "comm").read_text().strip()
            if inode in names:
                found.setdefault(names[inode], []).append((int(entry.name), comm))
    return found


@dataclass
class LabScaleWorld:
    lab: Lab
    running_interval: float | None = 60.0  # the lab starts its control plane at the default
    urls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.urls = list(services_status(self.lab)["apis"].values())

    @property
    def hosts(self) -> list[str]:
        return [f"h{i}" for i in range(1, self.lab.state().hosts + 1)]

    @property
    def controls(self) -> list[str]:
        return [control_name(i) for i in range(1, self.lab.state().control + 1)]

    def start(self) -> None:
        """The lab is up: nothing to start."""

    def close(self) -> None:
        """The outer run takes the lab down."""

    # -- the control plane ---------------------------------------------------------------

    def stop_serve(self) -> None:
        """Every control host's api, worker and health: SIGTERM, SIGKILL after a grace."""
        for owner in self.controls:
            for part in CONTROL_PARTS:
                self.lab.stop_registered(owner, part, STOP_GRACE)
        self.running_interval = None

    def start_serve(self, resync_interval: float = 60.0, timeout: float = 300) -> float:
        """Every control host's processes with ``worker.resync_interval``; seconds until
        every API answers (0 when they already run with that interval)."""
        if self.running_interval == resync_interval:
            return 0.0
        if self.running_interval is not None:
            self.stop_serve()
        started = time.monotonic()
        for index in range(1, len(self.controls) + 1):
            self._set_resync_interval(index, resync_interval)
            for part in CONTROL_PARTS:
                start_control_part(self.lab, index, part)
        self.running_interval = resync_interval
        pending = set(self.urls)
        while pending and time.monotonic() - started < timeout:
            for url in sorted(pending):
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(url + "/", timeout=2).status_code == 200:
                        pending.discard(url)
            time.sleep(0.2)
        if pending:
            raise RuntimeError(f"not answering after {timeout} s: {sorted(pending)}")
        return time.monotonic() - started

    def _set_resync_interval(self, index: int, interval: float) -> None:
        path = control_dir(self.lab, index) / SETTINGS_FILE
        tree = tomllib.loads(path.read_text())
        tree.setdefault("worker", {})["resync_interval"] = interval
        write_private(path, toml_text(tree))

    # -- what runs where -------------------------------------------------------------------

    def _registered(self, owner: str, role: str) -> list[int]:
        entries = self.lab.state().processes.get(owner, [])
        return [p.pid for p in entries if p.role == role]

    def _host_daemons(self) -> dict[str, list[tuple[int, str]]]:
        """Every host's amphora processes (HAProxy, keepalived), by host."""
        found: dict[str, list[tuple[int, str]]] = {h: [] for h in self.hosts}
        for namespace, procs in _by_namespace().items():
            for host in self.hosts:
                index = int(host[1:])
                if namespace.startswith(self.lab.names.host_prefix(index) + "amp-"):
                    found[host] += procs
        return found

    def haproxy_pids(self) -> list[int]:
        return [p for procs in self._host_daemons().values() for p, c in procs if c == "haproxy"]

    def process_rss(self) -> dict[str, Any]:
        """RSS (MB) per agent host (agent, HAProxies, keepalived) and per control host;
        the single-namespace run's keys hold the largest of each kind."""
        hosts: dict[str, Any] = {}
        for host, procs in self._host_daemons().items():
            agent = sum(rss_mb(p) for p in self._registered(host, AGENT_PART))
            haproxy = [rss_mb(p) for p, c in procs if c == "haproxy"]
            keepalived = sum(rss_mb(p) for p, c in procs if c == "keepalived")
            hosts[host] = {
                "agent_mb": round(agent, 1),
                "haproxy_processes": len(haproxy),
                "haproxy_mb": round(sum(haproxy), 1),
                "keepalived_mb": round(keepalived, 1),
                "total_mb": round(agent + sum(haproxy) + keepalived, 1),
            }
        controls = {
            owner: {
                f"{part}_mb": round(sum(rss_mb(p) for p in self._registered(owner, part)), 1)
                for part in CONTROL_PARTS
            }
            for owner in self.controls
        }
        every = [rss_mb(p) for p in self.haproxy_pids()]
        return {
            "serve_api_mb": max((c["api_mb"] for c in controls.values()), default=0.0),
            "serve_worker_mb": max((c["worker_mb"] for c in controls.values()), default=0.0),
            "node_agent_mb": max((h["agent_mb"] for h in hosts.values()), default=0.0),
            "haproxy_processes": len(every),
            "haproxy_total_mb": round(sum(every), 1),
            "haproxy_max_mb": max(every, default=0.0),
            "hosts": hosts,
            "control_hosts": controls,
        }

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of the control hosts' processes, of the agents and of the
        HAProxies running now (each since it started)."""

        def total(pids: list[int]) -> float:
            seconds = 0.0
            for pid in pids:
                with contextlib.suppress(OSError):
                    seconds += cpu_seconds(pid)
            return seconds

        control = [p for o in self.controls for part in CONTROL_PARTS
                   for p in self._registered(o, part)]  # fmt: skip
        agents = [p for h in self.hosts for p in self._registered(h, AGENT_PART)]
        return {"serve_and_worker": total(control), "node_agent": total(agents),
                "haproxy": total(self.haproxy_pids())}  # fmt: skip

    # -- an agent's restart ----------------------------------------------------------------

    def restart_agent(self, timeout: float = 600) -> dict[str, Any]:
        """SIGKILL the agent of the host with the most amphora processes, start it again:
        seconds until it serves (it adopts its amphorae and restores its L4 services
        first; its port accepts earlier, bound before its imports), how many it adopted,
        and the HAProxies replaced meanwhile."""
        daemons = self._host_daemons()
        host = max(self.hosts, key=lambda h: len(daemons[h]))
        before = {p for p, c in daemons[host] if c == "haproxy"}
        namespaces = {
            n for n in _by_namespace() if n.startswith(self.lab.names.host_prefix(int(host[1:])))
        }
        amphorae = sum(1 for n in namespaces if "-amp-" in n)
        log = self.lab.services_dir / host / "agent.log"
        offset = log.stat().st_size if log.exists() else 0
        started = time.monotonic()
        restart_agent(self.lab, host)  # returns once its port accepts: bound before imports
        accepting = time.monotonic() - started
        lines: list[str] = []
        while time.monotonic() - started < timeout:
            with open(log, "rb") as text:
                text.seek(offset)
                lines = text.read().decode(errors="replace").splitlines()
            if any(SERVING in line for line in lines):
                break
            time.sleep(0.1)
        serving = time.monotonic() - started
        after = {p for p, c in self._host_daemons()[host] if c == "haproxy"}
        return {
            "host": host,
            "amphora_namespaces": amphorae,
            "adopted": _listed(lines, "adopted amphorae "),
            "l4_services_restored": _listed(lines, "restored L4 services "),
            "seconds_until_port_accepts": round(accepting, 2),
            # Adoption and the L4 restore are done before the agent logs that it serves.
            "seconds_until_serving": round(serving, 2),
            "haproxy_processes_replaced": len(before - after),
        }


def _listed(lines: list[str], marker: str) -> int:
    """How many ids the log line holding ``marker`` lists ("…marker a, b, c")."""
    for line in lines:
        if marker in line:
            return len(line.split(marker, 1)[1].split(", "))
    return 0
