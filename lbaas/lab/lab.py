"""Lab: build, inspect, damage and remove a multi-host lab (see docs/architecture.md).

    client ─ router ─┬─ br-fab ─ control, host 1..N   (the fabric: management, the L4 tier's BGP)
                     ├─ br-vip ─ host 1..N            (the VIP network; router is its gateway)
                     └─ br-mK  ─ host 1..N            (member networks; router is their gateway)

The bridges live in the lab's fabric namespace; a host "losing its cable" is its bridge
ports going down there, which leaves the host's own addresses and routes in place for heal.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lbaas.amphora.short_root import links_directory
from lbaas.host.commands import run_command
from lbaas.lab import names as n
from lbaas.lab.addresses import (
    CLIENT_HOST,
    CONTROL_HOST,
    DATABASE_HOST,
    FIRST_HOST,
    ROUTER_HOST,
    address,
    control_host,
    local_mac,
    network_names,
    networks_in_use,
    pick_networks,
)
from lbaas.lab.base import HostFiles, LabError, LabExists, MountNamespaces, Runner
from lbaas.lab.host_loss import HostLoss, lose_host
from lbaas.lab.mounts import HostMounts, software_below_tmp
from lbaas.lab.netns import Netns
from lbaas.lab.state import (
    LabState,
    RegisteredProcess,
    StateFile,
    process_running,
    process_start_time,
)
from lbaas.progress import Progress

_EXIT_WAIT = 5.0


def _signal_and_wait(pids: list[int], signum: signal.Signals, wait: float) -> None:
    """Send ``signum`` to ``pids``; return when all are gone or ``wait`` seconds passed."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    deadline = time.monotonic() + wait
    while any(process_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)


#: How long the router trusts a neighbour entry (Linux's default is 30 s).
ROUTER_REACHABLE_MS = 2000


def _software() -> tuple[Path, ...]:
    """This interpreter, its virtualenv and the code (this tree and PYTHONPATH's), as far
    as a host's private /tmp would hide them."""
    trees = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)]
    trees.append(Path(__file__).resolve().parents[2])
    trees += [Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return software_below_tmp(trees)


class Lab:
    def __init__(
        self,
        name: str,
        state_dir: Path,
        *,
        run: Runner = run_command,
        rng: random.Random | None = None,
        mounts: MountNamespaces | None = None,
    ) -> None:
        self.names = n.LabNames(name)
        self._file = StateFile(state_dir, name)
        self._netns = Netns(run)
        self._mounts = mounts or HostMounts(run)
        self._run = run
        self._rng = rng or random.Random()

    # -- building -------------------------------------------------------------------------

    def up(
        self,
        hosts: int,
        members: int = 1,
        progress: Progress | None = None,
        control: int = 1,
        vip_prefix: int = 24,
    ) -> Lab:
        """Build the lab. On an error the state file stays, so ``down`` can remove the rest.

        ``control`` > 1: that many control hosts (ctl, ctl2…) and a database host (db).
        ``vip_prefix``: the VIP network's length (a /24 holds some 240 VIPs; a /18 16,000)."""
        if not 1 <= hosts <= n.MAX_HOSTS or not 1 <= members <= n.MAX_MEMBER_NETWORKS:
            raise LabError(
                f"a lab has 1-{n.MAX_HOSTS} hosts and 1-{n.MAX_MEMBER_NETWORKS} member networks"
            )
        if not 1 <= control <= n.MAX_CONTROL_HOSTS:
            raise LabError(f"a lab has 1-{n.MAX_CONTROL_HOSTS} control hosts")
        if not 16 <= vip_prefix <= 24:
            raise LabError("the VIP network is a /16 to a /24")
        if self._file.exists() or any(map(self.names.is_ours, self._netns.names())):
            raise LabExists(f"lab {self.names.lab} exists; run 'lbaas lab down' first")
        wanted = network_names(members)
        prefixes = [vip_prefix if net == "vip" else 24 for net in wanted]
        picked = pick_networks(len(wanted), networks_in_use(self._run), self._rng, prefixes)
        state = LabState(
            self.names.lab,
            hosts,
            members,
            {k: str(v) for k, v in zip(wanted, picked, strict=True)},
            control=control,
        )
        self._file.save(state)
        step = progress.step if progress is not None else (lambda _: None)
        step("fabric")
        self._build_fabric(state)
        step("router")
        self._build_router(state)
        step("control node")
        for index in range(1, control + 1):
            self._build_control(state, index)
        if control > 1:
            self._build_database(state)
        for index in range(1, hosts + 1):
            step(f"host h{index}")
            self._build_host(state, index)
        step("client")
        self._build_client(state)
        state.complete = True
        self._file.save(state)
        return self

    @contextlib.contextmanager
    def running(self, hosts: int, members: int = 1) -> Iterator[Lab]:
        """The lab, up for the ``with`` block and removed after it, even when building failed."""
        try:
            yield self.up(hosts, members)
        finally:
            self.down()

    def _namespace(self, state: LabState, namespace: str, *, host: bool = True) -> None:
        """Create ``namespace``; a ``host`` also gets its mount namespace (not the fabric,
        which runs nothing, nor an instance's or a DSR member's, which the lab's processes
        never enter)."""
        state.namespaces.append(namespace)
        self._file.save(state)  # intent first: a crash after this line leaves nothing unnamed
        self._netns.add(namespace)
        if host:
            self._mounts.create(namespace, self.host_files(namespace))

    def host_files(self, namespace: str) -> HostFiles:
        """What a process on lab host ``namespace`` sees of the lab's files: its own
        directories; the rest of every lab's state, access-log sockets and database is
        hidden. No directory is any two hosts' own: hosts share the network only."""
        tier = self.services_dir / "tier"
        rest = namespace.removeprefix(self.names.prefix)
        own: tuple[Path, ...] = ()
        crossed: tuple[Path, ...] = ()
        if n.control_index(rest):
            own = (self.services_dir / rest,)
        elif rest == "db":
            own = (self.services_dir / rest, self.names.database_dir)
        elif rest == "rtr":
            own = (tier / "rtr", tier / n.WATCHER_DIRECTORY)
        elif rest[:1] == "h" and rest[1:].isdigit():
            own = (self.services_dir / rest, tier / rest)
            crossed = (self.names.log_sockets / rest,)
        # Root's short links to amphorae directories (``short_root``) too: each host keeps
        # its own, and an agent that finds a link whose target it cannot see removes it.
        links = links_directory(0, {})
        hidden = (self.services_dir.parent, n.LOG_SOCKETS_ROOT, n.DATABASE_ROOT, links)
        return HostFiles(own=own, crossed=crossed, hidden=hidden, software=_software())

    def _bridged_networks(self, state: LabState) -> list[str]:
        return [net for net in state.networks if net != "out"]

    def _build_fabric(self, state: LabState) -> None:
        fabric = self.names.fabric
        self._namespace(state, fabric, host=False)
        self._netns.bridge(fabric, n.FABRIC_BRIDGE)
        self._netns.bridge(fabric, n.VIP_BRIDGE)
        for index in range(state.members):
            self._netns.bridge(fabric, n.member_bridge(index))

    def _attach(
        self, state: LabState, namespace: str, port: Callable[[str], str], host: int
    ) -> None:
        """Give ``namespace`` a link and address ``host`` on each bridged network."""
        for net in self._bridged_networks(state):
            inner = n.inner_interface(net)
            self._netns.veth(namespace, inner, self.names.fabric, port(net), bridge=n.bridge(net))
            self._netns.ip(
                namespace, "addr", "add", address(state.networks[net], host), "dev", inner
            )

    def _build_router(self, state: LabState) -> None:
        router = self.names.router
        self._namespace(state, router)
        self._netns.sysctl(router, "net.ipv4.ip_forward=1")
        self._attach(state, router, n.router_port, ROUTER_HOST)
        # A rebuilt amphora answers for the same VIP with a new MAC and announces nothing
        # (no gratuitous ARP yet), so the router must give up an old neighbour entry in a
        # second or two rather than Linux's 30 s or so: reachable 1-3 s, one probe 1 s after.
        for net in self._bridged_networks(state):
            neigh = f"net.ipv4.neigh.{n.inner_interface(net)}"
            self._netns.sysctl(
                router,
                f"{neigh}.base_reachable_time_ms={ROUTER_REACHABLE_MS}",
                f"{neigh}.delay_first_probe_time=1",
                f"{neigh}.ucast_solicit=1",
                f"{neigh}.retrans_time_ms=300",
            )

    def _build_control(self, state: LabState, index: int) -> None:
        self._fabric_only(
            state, self.names.control_host(index), n.control_port(index), control_host(index)
        )

    def _build_database(self, state: LabState) -> None:
        self._fabric_only(state, self.names.database, n.DATABASE_PORT, DATABASE_HOST)

    def _fabric_only(self, state: LabState, namespace: str, port: str, host: int) -> None:
        """A host with one link, on the fabric (a control host, the database host)."""
        self._namespace(state, namespace)
        self._netns.veth(namespace, n.FABRIC_IF, self.names.fabric, port, bridge=n.FABRIC_BRIDGE)
        self._netns.ip(
            namespace, "addr", "add", address(state.networks["fab"], host), "dev", n.FABRIC_IF
        )
        self._default_route(namespace, state.networks["fab"])

    def _build_host(self, state: LabState, index: int) -> None:
        host = self.names.host(index)
        self._namespace(state, host)
        fabric = self.names.fabric
        for net in self._bridged_networks(state):
            inner, port = n.inner_interface(net), n.host_port(index, net)
            if net == "fab":
                self._netns.veth(host, inner, fabric, port, bridge=n.FABRIC_BRIDGE)
            else:
                # The VIP and member uplinks are bridges, so an agent can plug amphorae into
                # them (agent.bridge_mappings) while the host keeps its own address there.
                # Their MAC is set once: a bridge whose address was never set takes its
                # lowest port's, so an amphora plugged in could change the host's MAC while
                # the router still sends the host's addresses (an entry node's VIPs) to the
                # old one (docs/lab.md, "A rolling upgrade in the lab").
                self._netns.bridge(host, inner, local_mac(self._rng))
                self._netns.veth(host, n.uplink_port(net), fabric, port, bridge=n.bridge(net))
                self._netns.ip(host, "link", "set", n.uplink_port(net), "master", inner)
            self._netns.ip(
                host, "addr", "add", address(state.networks[net], FIRST_HOST + index), "dev", inner
            )
        # Replies to the outside world leave by the VIP network, whose gateway is the router.
        self._default_route(host, state.networks["vip"])

    def _build_client(self, state: LabState) -> None:
        client, router = self.names.client, self.names.router
        self._namespace(state, client)
        self._netns.veth(client, n.CLIENT_IF, router, n.OUTSIDE_IF)
        self._netns.ip(
            router, "addr", "add", address(state.networks["out"], ROUTER_HOST), "dev", n.OUTSIDE_IF
        )
        self._netns.ip(
            client, "addr", "add", address(state.networks["out"], CLIENT_HOST), "dev", n.CLIENT_IF
        )
        self._default_route(client, state.networks["out"])

    def _default_route(self, namespace: str, network: str) -> None:
        gateway = address(network, ROUTER_HOST).split("/")[0]
        self._netns.ip(namespace, "route", "add", "default", "via", gateway)

    # -- removing -------------------------------------------------------------------------

    def down(self) -> list[str]:
        """Remove every namespace and process of the lab; the namespaces that were removed.

        Idempotent: what is already gone is skipped. Without a state file, namespaces named
        as this lab names its own are still found and removed.
        """
        state = self._file.load()
        recorded = state.namespaces if state else []
        found = [ns for ns in self._netns.names() if self.names.is_ours(ns)]
        if state is not None:
            self._kill([p for entries in state.processes.values() for p in entries])
        removed = []
        for namespace in dict.fromkeys([*recorded, *found]):
            # A namespace outlives its name while a process is in it; end them first.
            self._kill_pids(self._netns.pids(namespace))
            if self._netns.delete(namespace):
                removed.append(namespace)
        for namespace in self._mounts.names():
            if self.names.is_ours(namespace):
                self._mounts.remove(namespace)
        self._file.remove()
        # The processes' state directories (databases, amphora files, logs) go with them.
        shutil.rmtree(self._file.services_dir, ignore_errors=True)
        shutil.rmtree(self.names.log_sockets, ignore_errors=True)
        shutil.rmtree(self.names.database_dir, ignore_errors=True)
        return removed

    def _kill(self, processes: list[RegisteredProcess]) -> None:
        self._kill_pids([p.pid for p in processes if process_start_time(p.pid) == p.start_time])

    def _kill_pids(self, pids: list[int]) -> None:
        _signal_and_wait(pids, signal.SIGKILL, _EXIT_WAIT)

    # -- processes and failures -----------------------------------------------------------

    def register_process(self, owner: str, pid: int, role: str = "") -> None:
        """Record a process the lab started for ``owner`` (a host such as "h2", or "ctl").

        ``host-down`` SIGKILLs a host's registered processes (its agent, its amphorae's
        HAProxy, wherever they run), and ``down`` every registered process.
        """
        state = self._loaded()
        start_time = process_start_time(pid)
        if start_time is None:
            raise LabError(f"process {pid} does not exist")
        state.processes.setdefault(owner, []).append(RegisteredProcess(pid, start_time, role))
        self._file.save(state)

    def host_down(self, host: str) -> HostLoss:
        """Lose ``host`` at one instant (``lbaas.lab.host_loss``): every process of it
        frozen, its links cut in one batch, then all SIGKILLed; what it took. The
        namespaces stay, as a dead host's disks do, until ``down``. ``host`` may be a
        control host (ctl, ctl2…): its api, worker and health go with it."""
        if n.control_index(host):
            return self._control_down(host)
        state, index = self._host(host)
        registered = [
            p.pid
            for p in state.processes.pop(host, [])
            if process_start_time(p.pid) == p.start_time
        ]
        amphorae = [ns for ns in self._netns.names() if self.names.on_host(ns, index)]
        loss = lose_host(
            self._run,
            self.names.fabric,
            [n.host_port(index, net) for net in self._bridged_networks(state)],
            registered,
            [self.names.host(index), *amphorae],
            process_running,
            _EXIT_WAIT,
        )
        self._mark_links(state, index, up=False)
        return loss

    def _control_down(self, host: str) -> HostLoss:
        state = self._loaded()
        index = n.control_index(host)
        if not 1 <= index <= state.control:
            raise LabError(
                f"lab {self.names.lab} has {state.control} control host(s), not {host!r}"
            )
        registered = [
            p.pid
            for p in state.processes.pop(host, [])
            if process_start_time(p.pid) == p.start_time
        ]
        loss = lose_host(
            self._run,
            self.names.fabric,
            [n.control_port(index)],
            registered,
            [self.names.control_host(index)],
            process_running,
            _EXIT_WAIT,
        )
        state.down_controls = sorted({*state.down_controls, index})
        self._file.save(state)
        return loss

    def host_shutdown(self, host: str) -> None:
        """Stop ``host`` in order, as a graceful shutdown does: its registered processes
        die, then those in its namespace and its amphorae's, then its links go down (a
        killed BIRD's sessions close cleanly while the links are still up)."""
        state, index = self._host(host)
        self._kill(state.processes.pop(host, []))
        amphorae = [ns for ns in self._netns.names() if self.names.on_host(ns, index)]
        for namespace in [self.names.host(index), *amphorae]:
            self._kill_pids(self._netns.pids(namespace))
        self._set_host_links(state, index, up=False)

    def partition(self, host: str) -> None:
        """Cut ``host`` off: its links go down, its processes keep running."""
        state, index = self._host(host)
        self._set_host_links(state, index, up=False)

    def heal(self, host: str) -> None:
        state, index = self._host(host)
        self._set_host_links(state, index, up=True)

    def _set_host_links(self, state: LabState, index: int, *, up: bool) -> None:
        # The bridge-side ends go down, as a switch port does when its cable is pulled: the
        # host sees no carrier but keeps its addresses and routes, so heal needs nothing else.
        for net in self._bridged_networks(state):
            self._netns.set_link(self.names.fabric, n.host_port(index, net), up=up)
        self._mark_links(state, index, up=up)

    def _mark_links(self, state: LabState, index: int, *, up: bool) -> None:
        state.down_hosts = sorted(set(state.down_hosts) - {index} | ({index} if not up else set()))
        self._file.save(state)

    def save(self, state: LabState) -> None:
        self._file.save(state)

    def host_index(self, host: str) -> int:
        """``hN``'s index (LabError when the lab has no such host)."""
        return self._host(host)[1]

    def add_namespace(self, namespace: str) -> None:
        """Create a namespace the lab owns (recorded first, so ``down`` removes it): an
        instance's or a DSR member's, no host of its own (no mount namespace)."""
        self._namespace(self._loaded(), namespace, host=False)

    def remove_namespace(self, namespace: str) -> None:
        """End the processes in one of the lab's namespaces and delete it."""
        self._kill_pids(self._netns.pids(namespace))
        self._netns.delete(namespace)
        self._mounts.remove(namespace)
        state = self._loaded()
        state.namespaces = [ns for ns in state.namespaces if ns != namespace]
        self._file.save(state)

    def kill_registered(self, owner: str, role: str | None = None) -> None:
        """SIGKILL the processes registered for ``owner`` (an agent, to restart it); with
        ``role``, only those registered with it (a control host's api, say)."""
        self._kill(self._unregister(owner, role))

    def stop_registered(self, owner: str, role: str, grace: float) -> None:
        """Stop ``owner``'s ``role`` processes as a service manager does: SIGTERM, then
        SIGKILL what still runs after ``grace`` seconds (a rolling upgrade's step)."""
        stopping = [
            p.pid
            for p in self._unregister(owner, role)
            if process_start_time(p.pid) == p.start_time
        ]
        _signal_and_wait(stopping, signal.SIGTERM, grace)
        self._kill_pids([pid for pid in stopping if process_running(pid)])

    def _unregister(self, owner: str, role: str | None) -> list[RegisteredProcess]:
        state = self._loaded()
        registered = state.processes.pop(owner, [])
        kept = [p for p in registered if role is not None and p.role != role]
        if kept:
            state.processes[owner] = kept
        self._file.save(state)
        return [p for p in registered if p not in kept]

    def state(self) -> LabState:
        """The state of a lab that is up (raises LabError otherwise)."""
        return self._loaded()

    @property
    def services_dir(self) -> Path:
        """Where the lab's processes keep their state: ``<state_dir>/labs/<lab>/``."""
        return self._file.services_dir

    def _loaded(self) -> LabState:
        state = self._file.load()
        if state is None or not state.complete:
            raise LabError(f"lab {self.names.lab} is not up")
        return state

    def _host(self, host: str) -> tuple[LabState, int]:
        state = self._loaded()
        index = int(host[1:]) if host[:1] == "h" and host[1:].isdigit() else 0
        if not 1 <= index <= state.hosts:
            raise LabError(f"lab {self.names.lab} has hosts h1-h{state.hosts}, not {host!r}")
        return state, index

    # -- inspecting -----------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """What the state file says the lab is, and which of its namespaces exist now."""
        state = self._file.load()
        if state is None:
            return {"name": self.names.lab, "up": False, "namespaces": {}}
        present = set(self._netns.names())
        return {
            "name": state.name,
            "up": state.complete,
            "networks": state.networks,
            "router": self._node(state, self.names.router, ROUTER_HOST),
            "control": self._node(state, self.names.control, CONTROL_HOST, only=("fab",)),
            "control_hosts": {
                n.control_name(index): {
                    **self._node(
                        state, self.names.control_host(index), control_host(index), ("fab",)
                    ),
                    "links_up": index not in state.down_controls,
                    "processes": [p.pid for p in state.processes.get(n.control_name(index), [])],
                }
                for index in range(1, state.control + 1)
            },
            "database": (
                self._node(state, self.names.database, DATABASE_HOST, only=("fab",))
                if state.control > 1
                else None
            ),
            "client": self._node(state, self.names.client, CLIENT_HOST, only=("out",)),
            "hosts": {
                f"h{index}": {
                    **self._node(state, self.names.host(index), FIRST_HOST + index),
                    "links_up": index not in state.down_hosts,
                    "processes": [p.pid for p in state.processes.get(f"h{index}", [])],
                }
                for index in range(1, state.hosts + 1)
            },
            "namespaces": {ns: ns in present for ns in state.namespaces},
            "instances": state.instances,
        }

    def _node(
        self, state: LabState, namespace: str, host: int, only: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        nets = only or tuple(self._bridged_networks(state)) + (
            ("out",) if namespace == self.names.router else ()
        )
        return {
            "namespace": namespace,
            "addresses": {net: address(state.networks[net], host) for net in nets},
        }
