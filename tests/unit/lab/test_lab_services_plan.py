"""What the lab tells its control plane and agents, checked without starting them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lbaas.config import load_settings
from lbaas.lab.names import LabNames
from lbaas.lab.services import (
    agent_settings,
    control_settings,
    enrol_command,
    network_id,
    subnet_id,
    toml_text,
)
from lbaas.lab.state import LabState

STATE = LabState(
    "lab",
    3,
    2,
    {
        "fab": "10.70.0.0/24",
        "vip": "10.70.1.0/24",
        "m0": "10.70.2.0/24",
        "m1": "10.70.3.0/24",
        "out": "10.70.4.0/24",
    },
    complete=True,
)


def test_the_control_plane_declares_the_labs_subnets_with_router_and_hosts_reserved(
    tmp_path: Path,
) -> None:
    settings = load_settings(
        _write(control_settings(STATE, tmp_path, "k" * 64), tmp_path), environ={}
    )
    subnets = {s.name: s for s in settings.network.subnets}
    assert sorted(subnets) == ["lab-m0", "lab-m1", "lab-vip"]
    vip = subnets["lab-vip"]
    assert (vip.id, vip.network_id) == (subnet_id("lab", "vip"), network_id("lab", "vip"))
    assert (vip.cidr, vip.gateway_ip) == ("10.70.1.0/24", "10.70.1.1")
    assert vip.reserved_addresses == ("10.70.1.11", "10.70.1.12", "10.70.1.13")
    # No agent of its own: the agents are the enrolled hosts. Heartbeats come on the fabric.
    assert settings.agent.mode == "netns" and settings.agent.host_id == "local"
    assert settings.health.bind_host == "10.70.0.2" and settings.health.heartbeat_key == "k" * 64
    assert settings.state_dir == tmp_path


def test_each_agent_maps_the_labs_networks_onto_its_uplinks_and_names_its_namespaces(
    tmp_path: Path,
) -> None:
    settings = load_settings(_write(agent_settings(STATE, 2, tmp_path), tmp_path), environ={})
    assert settings.agent.host == "10.70.0.12" and settings.agent.mode == "netns"
    assert settings.agent.namespace_prefix == "lab-h2-"
    assert settings.agent.bridge_mappings == {
        network_id("lab", "vip"): "vip0",
        network_id("lab", "m0"): "mem0",
        network_id("lab", "m1"): "mem1",
    }
    # Enrolled as h2: identity and heartbeat key from its bundle, heartbeats to the ctl.
    assert settings.agent.host_id == "h2"
    assert settings.agent.bundle == str(tmp_path / "bundle")
    assert settings.agent.health_managers == ("10.70.0.2:5555",)
    # Its access-log sockets in the lab's own directory, which the lab's removal takes.
    assert settings.access_log.socket_directory == Path("/run/lbaas/lab-access-log/lab/h2")


def test_each_host_is_enrolled_as_an_operator_would_with_its_fabric_address(
    tmp_path: Path,
) -> None:
    argv = enrol_command(STATE, 3, tmp_path / "ctl.toml", tmp_path / "h3")
    assert argv[-13:] == [
        "agent", "enrol", "h3",
        "--address", "10.70.0.13",
        "--agent-port", "9443",
        "--mode", "netns",
        "--health-manager", "10.70.0.2:5555",
        "--out", str(tmp_path / "h3" / "bundle"),
    ]  # fmt: skip
    assert argv[argv.index("--config") + 1] == str(tmp_path / "ctl.toml")


def test_ids_are_stable_per_lab_and_differ_between_labs() -> None:
    assert network_id("lab", "vip") == network_id("lab", "vip") != network_id("lab2", "vip")
    assert subnet_id("lab", "vip") != network_id("lab", "vip")


def test_a_lab_finds_its_hosts_amphora_namespaces_and_no_one_elses() -> None:
    names = LabNames("lab")
    amphora = f"{names.host_prefix(2)}amp-0123456789ab"
    assert names.is_ours(amphora) and names.on_host(amphora, 2)
    assert not names.on_host(amphora, 1) and not names.on_host(f"{names.host_prefix(22)}amp-x", 2)
    assert not LabNames("la").is_ours(amphora) and not names.is_ours("lab-h2x-amp-1")


def _write(tree: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "lbaas.toml"
    path.write_text(toml_text(tree))
    return path


THREE = LabState(
    "lab", 2, 1, {"fab": "10.70.0.0/24", "vip": "10.70.1.0/24", "m0": "10.70.2.0/24"}, control=3
)
DATABASE = "postgresql+psycopg://lbaas@10.70.0.9:5432/lbaas"


def test_each_of_three_control_hosts_shares_the_database_and_coordinates_on_it(
    tmp_path: Path,
) -> None:
    tree = control_settings(THREE, tmp_path, "k" * 64, index=2, database=DATABASE)
    settings = load_settings(_write(tree, tmp_path), environ={})
    # Its own health process on its own fabric address (ctl2 is .3), the one database.
    assert settings.health.bind_host == "10.70.0.3"
    assert settings.database_url == DATABASE
    assert settings.coordination.engine == "postgresql" and settings.coordination.url == ""
    assert settings.coordination.leader_ttl == 3.0


def test_agents_heartbeat_to_every_control_hosts_health_process(tmp_path: Path) -> None:
    managers = ("10.70.0.2:5555", "10.70.0.3:5555", "10.70.0.4:5555")
    settings = load_settings(_write(agent_settings(THREE, 1, tmp_path), tmp_path), environ={})
    assert settings.agent.health_managers == managers
    argv = enrol_command(THREE, 1, tmp_path / "ctl.toml", tmp_path / "h1")
    given = [argv[i + 1] for i, word in enumerate(argv) if word == "--health-manager"]
    assert tuple(given) == managers
