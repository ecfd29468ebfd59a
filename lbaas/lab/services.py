"""Real lbaas in a lab: a control plane in ``<lab>-ctl`` and an agent in every host.

The control plane is ``lbaas api``, ``lbaas worker`` and ``lbaas health`` on SQLite in
``<state_dir>/labs/<lab>/ctl``; host ``hN`` runs ``lbaas agent`` in netns mode from
``<state_dir>/labs/<lab>/hN``. Each reads one settings file the lab writes there (0600: it
holds the heartbeat key). The lab's VIP and member networks are declared as subnets whose
gateway is the router and whose hosts' and router's addresses are reserved, and every agent
maps those networks onto its host's uplink bridges (``vip0``, ``mem0``…) and names its
amphora namespaces ``<lab>-hN-amp-…``, so a VIP is reached from ``<lab>-cli`` through the
router and ``host-down``/``down`` find every amphora.

The lab is a fleet: after ``lbaas db upgrade`` every host is enrolled as a real operator
enrols one, ``lbaas agent enrol hN --address <hN's fabric address> --mode netns
--health-manager <ctl's fabric address>:5555 --out <lab dir>/hN/bundle`` run in
``<lab>-ctl``, and host ``hN``'s agent starts from that bundle (certificate naming
``hN.agents.lbaas``, the CA, the heartbeat key; no CA key). The control plane finds the
agents in its hosts registry and places each amphora on the least-loaded live host.
"""

from __future__ import annotations

import json
import secrets
import sys
import uuid
from pathlib import Path
from typing import Any

from lbaas.lab import names as n
from lbaas.lab import processes
from lbaas.lab.addresses import FIRST_HOST, ROUTER_HOST, address, bare, control_host
from lbaas.lab.control_secrets import share_control_secrets
from lbaas.lab.database_host import start_database
from lbaas.lab.lab import Lab
from lbaas.lab.state import LabState
from lbaas.private_files import make_private_directory, write_private
from lbaas.progress import Progress

API_PORT = 9876
AGENT_PORT = 9443
HEALTH_PORT = 5555
#: Where each host's enrolment bundle is written, inside the host's lab directory.
BUNDLE_DIR = "bundle"
_START_TIMEOUT = 60.0
SETTINGS_FILE = "lbaas.toml"
#: The lab's agents read their ports this often (the default is 1 s).
METADATA_SYNC_INTERVAL = 0.5
#: With several control hosts: a lost leader's singleton loops resume elsewhere within this.
LEADER_TTL = 3.0
NOOP_DELAY = 0.2


def network_id(lab: str, net: str) -> str:
    """The id the lab's network ``net`` (vip, m0..) has in the control plane: stable per lab."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"lbaas-lab:{lab}/{net}/network"))


def subnet_id(lab: str, net: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"lbaas-lab:{lab}/{net}/subnet"))


def _served_networks(state: LabState) -> list[str]:
    """The networks amphorae have legs on: the VIP network and the member networks."""
    return ["vip", *(f"m{index}" for index in range(state.members))]


def _subnets(state: LabState) -> list[dict[str, Any]]:
    hosts = [FIRST_HOST + index for index in range(1, state.hosts + 1)]
    return [
        {
            "id": subnet_id(state.name, net),
            "network_id": network_id(state.name, net),
            "cidr": state.networks[net],
            "name": f"{state.name}-{net}",
            "gateway_ip": bare(address(state.networks[net], ROUTER_HOST)),
            "reserved_addresses": [bare(address(state.networks[net], h)) for h in hosts],
        }
        for net in _served_networks(state)
    ]


def _fabric_address(state: LabState, host: int) -> str:
    return bare(address(state.networks["fab"], host))


def control_settings(
    state: LabState,
    directory: Path,
    key: str,
    metadata_secret: str = "",
    tier: int = 0,
    return_mode: str = "nat",
    *,
    index: int = 1,
    database: str = "",
) -> dict[str, Any]:
    """Control host ``index``'s settings; ``database``: the PostgreSQL every control host
    shares (several control hosts), which then coordinates them too."""
    tree: dict[str, Any] = {
        "state_dir": str(directory),
        # On every address: the agents read their ports and forward metadata requests
        # over the fabric; the CLI in ctl keeps 127.0.0.1.
        # The lab's namespaces are its own network: noauth beyond loopback is meant here.
        "api": {"host": "0.0.0.0", "port": API_PORT, "allow_insecure_noauth": True},
        "metadata": {"shared_secret": metadata_secret},
        "health": {
            "bind_host": _fabric_address(state, control_host(index)),
            "bind_port": HEALTH_PORT,
            "heartbeat_key": key,
        },
        # The agents are the hosts registry's; the mode tells the API what their amphorae
        # can do (namespaces: ACTIVE_STANDBY, UDP).
        "agent": {"mode": "netns"},
        "network": {"subnets": _subnets(state)},
        # Distributed load balancers are offered: every host's agent balances them for the
        # clients on its host (without a tier, one host is the entry for the rest).
        "providers": {
            "enabled": ["amphora", "noop", "distributed"],
            "distributed_status_interval": 0.5,
            # A noop load balancer converges in a fifth of a second, as a small data plane
            # would: a control host lost has converges in flight, not only finished ones.
            "noop_delay": NOOP_DELAY,
        },
    }
    if database:
        tree["database"] = {"url": database}
        tree["coordination"] = {"engine": "postgresql", "leader_ttl": LEADER_TTL}
    if tier:
        # An L4 tier on h1-hK: the distributed VIPs are placed in the one group of every
        # tier node, whose agents announce them over BGP.
        tree["tier"] = {
            "groups": {TIER_GROUP: [host_id(i) for i in range(1, tier + 1)]},
            "return_mode": return_mode,
        }
    return tree


#: The lab's one tier group (``tier.groups``).
TIER_GROUP = "g0"


def tier_node_files(services_dir: Path, index: int) -> tuple[Path, Path]:
    """Tier node ``hN``'s BIRD control socket and the VIP routes file its agent writes."""
    directory = services_dir / "tier" / f"h{index}"
    return directory / "bird.ctl", directory / "agent-vips.conf"


def _health_managers(state: LabState) -> list[str]:
    """Every control host's health process: an agent sends each heartbeat to all."""
    return [
        f"{_fabric_address(state, control_host(index))}:{HEALTH_PORT}"
        for index in range(1, state.control + 1)
    ]


def host_id(index: int) -> str:
    """Host ``hN``'s id in the fleet: the lab's name for it."""
    return f"h{index}"


def agent_settings(
    state: LabState,
    index: int,
    directory: Path,
    metadata_secret: str = "",
    tier_files: tuple[Path, Path] | None = None,
) -> dict[str, Any]:
    """Host ``hN``'s agent: its bundle (identity, heartbeat key) and the lab's plumbing;
    on a tier node, its BIRD's control socket and the VIP routes file BIRD includes."""
    names = n.LabNames(state.name)
    tree: dict[str, Any] = {
        "state_dir": str(directory),
        # The metadata proxies read this host's ports from, and forward to, the control
        # plane over the fabric, signing with the lab's secret.
        "metadata": {
            "shared_secret": metadata_secret,
            "registry_url": f"http://{_fabric_address(state, control_host(1))}:{API_PORT}",
            "sync_interval": METADATA_SYNC_INTERVAL,
        },
        "agent": {
            "host_id": host_id(index),
            "bundle": str(directory / BUNDLE_DIR),
            "health_managers": _health_managers(state),
            # The controller reaches the agent over the fabric; the amphorae's legs go on
            # the host's uplink bridges (bridge_mappings).
            "host": _fabric_address(state, FIRST_HOST + index),
            "port": AGENT_PORT,
            "mode": "netns",
            "namespace_prefix": names.host_prefix(index),
            "bridge_mappings": {
                network_id(state.name, net): n.inner_interface(net)
                for net in _served_networks(state)
            },
        },
    }
    tree["access_log"] = {"socket_directory": str(names.log_sockets / host_id(index))}
    if tier_files is not None:
        tree["agent"]["tier_bird_socket"] = str(tier_files[0])
        tree["agent"]["tier_vips_file"] = str(tier_files[1])
    return tree


def toml_text(tree: dict[str, Any]) -> str:
    """TOML for a settings tree of strings, numbers, lists and tables (one level of tables,
    lists of tables as ``[[a.b]]``). JSON's string and number forms are TOML's."""
    top = [f"{key} = {_value(value)}" for key, value in tree.items() if not isinstance(value, dict)]
    lines = [*top, ""]
    for section, table in tree.items():
        if not isinstance(table, dict):
            continue
        lines.append(f"[{section}]")
        nested = {k: v for k, v in table.items() if _is_table_list(v)}
        lines += [f"{k} = {_value(v)}" for k, v in table.items() if k not in nested]
        for key, items in nested.items():
            for item in items:
                lines += [
                    "",
                    f"[[{section}.{key}]]",
                    *(f"{k} = {_value(v)}" for k, v in item.items()),
                ]
        lines.append("")
    return "\n".join(lines)


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(value)  # str, int, float, bool (true/false), as TOML writes them


def enrol_command(state: LabState, index: int, control: Path, agent_dir: Path) -> list[str]:
    """``lbaas agent enrol hN …`` with the control plane's settings: host ``hN``'s bundle
    into ``agent_dir/bundle``, the host recorded (DOWN until its first heartbeat)."""
    managers = [arg for m in _health_managers(state) for arg in ("--health-manager", m)]
    return _lbaas(
        control,
        "agent",
        "enrol",
        host_id(index),
        "--address",
        _fabric_address(state, FIRST_HOST + index),
        "--agent-port",
        str(AGENT_PORT),
        "--mode",
        "netns",
        *managers,
        "--out",
        str(agent_dir / BUNDLE_DIR),
    )


def lbaas_command(settings_file: Path, *command: str) -> list[str]:
    """``lbaas --config settings_file command…`` with this Python."""
    return _lbaas(settings_file, *command)


def _lbaas(settings_file: Path, *command: str) -> list[str]:
    return [sys.executable, "-m", "lbaas.cli", "--config", str(settings_file), *command]


def _write_settings(directory: Path, tree: dict[str, Any]) -> Path:
    make_private_directory(directory)
    path = directory / SETTINGS_FILE
    write_private(path, toml_text(tree))
    return path


def start_services(
    lab: Lab,
    progress: Progress | None = None,
    tier: int = 0,
    return_mode: str = "nat",
    spare_amphorae: int = 0,
    code: str = "",
) -> dict[str, Any]:
    """Start the control plane and every host's agent in a lab that is up; what was started.

    ``tier``: h1-hK will be L4 tier nodes (``lbaas.lab.tier``, started after this): their
    agents announce the VIPs the distributed provider places in their group, whose members
    answer by ``return_mode`` (``tier.return_mode``). ``spare_amphorae``: every agent's
    ``agent.spare_amphorae`` (``bench/host_loss.py --spares``). ``code``: the source tree
    every process, the schema's ``db upgrade`` and the enrolments run (another commit's,
    ``lbaas.lab.upgrade``; "": this code), recorded so that restarts keep it.

    With several control hosts (``up --control K``), the database host's PostgreSQL is
    started first and each control host runs api, worker and health against it
    (``lbaas.lab.control_hosts``).

    Every process is registered with the lab before the next starts, so ``down`` (or
    ``host-down``) kills whatever had started when a later step fails.
    """
    step = progress.step if progress is not None else (lambda _: None)
    state = lab.state()
    names = lab.names
    step("database schema")
    metadata_secret = secrets.token_hex(32)
    controls = range(1, state.control + 1)
    hosts = range(1, state.hosts + 1)
    _record_code(lab, code)
    env = processes.code_environment(code)
    control = _write_control_settings(lab, metadata_secret, tier, return_mode)
    processes.run_to_end(names.control, _lbaas(control, "db", "upgrade"), env=env)
    agent_files = _write_agent_settings(lab, metadata_secret, tier, spare_amphorae)
    # Enrolment needs the schema (it records the host) and gives each agent its identity.
    # It runs before the control plane starts: side by side, six Python start-ups on a
    # busy two-core machine made the enrolments three times slower, and nothing sooner.
    step("enrolling agents")
    enrolments = [enrol_command(state, i, control, agent_files[i].parent) for i in hosts]
    processes.run_all_to_end(names.control, enrolments, env=env)
    # The fleet's CA (made by the enrolments) and one key-encryption key, on every
    # control host as an operator installs them.
    share_control_secrets([control_dir(lab, index) for index in controls])
    step("starting agents and control plane")
    for index in hosts:
        _start_agent(lab, index)
    for index in controls:
        _start_control(lab, index)
    step("waiting for the API and agents")
    _wait_started(lab, agent_files)
    return services_status(lab)


def _wait_started(lab: Lab, agent_files: dict[int, Path]) -> None:
    """Until every control host's API and every agent accept connections."""
    state = lab.state()
    for index in range(1, state.control + 1):
        log = control_dir(lab, index) / "api.log"
        namespace = lab.names.control_host(index)
        processes.wait_listening(namespace, "127.0.0.1", API_PORT, log, _START_TIMEOUT)
    for index, settings_file in agent_files.items():
        log = settings_file.parent / "agent.log"
        agent_address = _fabric_address(state, FIRST_HOST + index)
        processes.wait_listening(
            lab.names.host(index), agent_address, AGENT_PORT, log, _START_TIMEOUT
        )


def _write_agent_settings(
    lab: Lab, metadata_secret: str, tier: int, spare_amphorae: int
) -> dict[int, Path]:
    """Every host's agent settings file, by host index (h1-h``tier`` as tier nodes)."""
    state = lab.state()
    agent_files = {}
    for index in range(1, state.hosts + 1):
        agent_dir = lab.services_dir / host_id(index)
        files = tier_node_files(lab.services_dir, index) if index <= tier else None
        tree = agent_settings(state, index, agent_dir, metadata_secret, files)
        if spare_amphorae:
            tree["agent"]["spare_amphorae"] = spare_amphorae
        agent_files[index] = _write_settings(agent_dir, tree)
    return agent_files


def _write_control_settings(lab: Lab, metadata_secret: str, tier: int, return_mode: str) -> Path:
    """Every control host's settings file (the database host's PostgreSQL started first
    when there are several); the first one's path."""
    state = lab.state()
    database = start_database(lab) if state.control > 1 else ""
    key = secrets.token_hex(32)
    for index in range(state.control, 0, -1):
        directory = control_dir(lab, index)
        tree = control_settings(
            state, directory, key, metadata_secret, tier, return_mode,
            index=index, database=database,
        )  # fmt: skip
        written = _write_settings(directory, tree)
    return written


def control_dir(lab: Lab, index: int) -> Path:
    """Control host ``index``'s state directory: ``<services_dir>/ctl``, ``…/ctl2``…"""
    return lab.services_dir / n.control_name(index)


#: A control host's processes, in the order they start (and a rolling upgrade's order).
CONTROL_PARTS = ("api", "worker", "health")
AGENT_PART = "agent"


def code_key(owner: str, part: str) -> str:
    """A process's key in ``LabState.code``: "h1" (its agent), "ctl2/api"…"""
    return owner if part == AGENT_PART else f"{owner}/{part}"


def _record_code(lab: Lab, code: str) -> None:
    """Every service process of the lab to run ``code`` ("": this code)."""
    state = lab.state()
    owners: list[tuple[str, tuple[str, ...]]] = [
        (host_id(i), (AGENT_PART,)) for i in range(1, state.hosts + 1)
    ]
    owners += [(n.control_name(i), CONTROL_PARTS) for i in range(1, state.control + 1)]
    state.code = {code_key(owner, part): code for owner, parts in owners for part in parts}
    lab.save(state)


def start_control_part(lab: Lab, index: int, part: str) -> None:
    """Start control host ``index``'s ``part`` (api, worker, health) from its recorded code."""
    directory = control_dir(lab, index)
    owner = n.control_name(index)
    env = processes.code_environment(lab.state().code.get(code_key(owner, part), ""))
    argv = _lbaas(directory / SETTINGS_FILE, part)
    log = directory / f"{part}.log"
    pid = processes.start(lab.names.control_host(index), argv, log, directory, env)
    lab.register_process(owner, pid, part)


def _start_control(lab: Lab, index: int) -> None:
    for part in CONTROL_PARTS:
        start_control_part(lab, index, part)


def _start_agent(lab: Lab, index: int) -> None:
    agent_dir = lab.services_dir / host_id(index)
    env = processes.code_environment(lab.state().code.get(host_id(index), ""))
    argv = _lbaas(agent_dir / SETTINGS_FILE, AGENT_PART)
    pid = processes.start(lab.names.host(index), argv, agent_dir / "agent.log", agent_dir, env)
    lab.register_process(host_id(index), pid, AGENT_PART)


def restart_agent(lab: Lab, host: str) -> None:
    """SIGKILL host ``hN``'s agent and start it again (what it ran keeps running)."""
    lab.kill_registered(host_id(lab.host_index(host)), AGENT_PART)
    start_agent(lab, host)


def start_agent(lab: Lab, host: str) -> None:
    """Start host ``hN``'s agent (after ``Lab.kill_registered``) and wait for its API."""
    index = lab.host_index(host)
    _start_agent(lab, index)
    state = lab.state()
    agent_dir = lab.services_dir / host_id(index)
    agent_address = _fabric_address(state, FIRST_HOST + index)
    processes.wait_listening(
        lab.names.host(index), agent_address, AGENT_PORT, agent_dir / "agent.log", _START_TIMEOUT
    )


def services_status(lab: Lab) -> dict[str, Any]:
    """Where the lab's control plane answers and which subnets it offers."""
    state = lab.state()
    return {
        "api": f"http://127.0.0.1:{API_PORT}",
        "api_namespace": lab.names.control,
        "settings": str(lab.services_dir / "ctl" / SETTINGS_FILE),
        "agents": {
            host_id(i): f"{_fabric_address(state, FIRST_HOST + i)}:{AGENT_PORT}"
            for i in range(1, state.hosts + 1)
        },
        "control_processes": [p.pid for p in state.processes.get("ctl", [])],
        # Every control host's API on its fabric address, reached from any of the lab's
        # namespaces (cli through the router): a client spreads its calls over these.
        "apis": {
            n.control_name(i): f"http://{_fabric_address(state, control_host(i))}:{API_PORT}"
            for i in range(1, state.control + 1)
        },
        "database": "postgresql" if state.control > 1 else "sqlite",
        "vip_subnet_id": subnet_id(state.name, "vip"),
        "member_subnet_ids": {
            net: subnet_id(state.name, net) for net in _served_networks(state) if net != "vip"
        },
        "directory": str(lab.services_dir),
    }
