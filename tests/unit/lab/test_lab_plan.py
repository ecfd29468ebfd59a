"""The lab's plan without root: names, address choice, state file, and intent before action.

A recording runner stands in for ``ip``: it answers every command with success and checks,
at each "ip netns add", that the state file already names the namespace.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from lbaas.host.base import CommandResult
from lbaas.lab.addresses import pick_networks
from lbaas.lab.base import HostFiles, LabError, LabExists
from lbaas.lab.lab import Lab
from lbaas.lab.names import LabNames, bridge, control_index, host_port, inner_interface
from lbaas.lab.state import LabState, RegisteredProcess, StateFile


class RecordingRunner:
    def __init__(self, state: StateFile, existing: str = "") -> None:
        self.state = state
        self.existing = existing
        self.commands: list[list[str]] = []
        self.unrecorded: list[str] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        self.commands.append(argv)
        if argv[:3] == ["ip", "netns", "add"]:
            recorded = self.state.load()
            if recorded is None or argv[3] not in recorded.namespaces:
                self.unrecorded.append(argv[3])
        if argv[:3] == ["ip", "netns", "list"]:
            return CommandResult(0, self.existing, "")
        return CommandResult(0, "[]" if "-j" in argv else "", "")


class FakeMounts:
    """Records the hosts' mount namespaces instead of making them (they need root)."""

    def __init__(self) -> None:
        self.created: dict[str, HostFiles] = {}

    def create(self, namespace: str, files: HostFiles) -> None:
        self.created[namespace] = files

    def remove(self, namespace: str) -> None:
        self.created.pop(namespace, None)

    def names(self) -> list[str]:
        return sorted(self.created)


def test_every_namespace_is_recorded_before_it_is_created(tmp_path: Path) -> None:
    runner = RecordingRunner(StateFile(tmp_path, "lab"))
    Lab("lab", tmp_path, mounts=FakeMounts(), run=runner).up(hosts=3, members=2)
    created = [argv[3] for argv in runner.commands if argv[:3] == ["ip", "netns", "add"]]
    assert created == ["lab-fab", "lab-rtr", "lab-ctl", "lab-h1", "lab-h2", "lab-h3", "lab-cli"]
    assert runner.unrecorded == []
    state = StateFile(tmp_path, "lab").load()
    assert state is not None and state.complete and state.namespaces == created
    # Nothing is ever created in the root namespace: every link command names a namespace.
    links = [argv for argv in runner.commands if "link" in argv and "add" in argv]
    assert links and all(argv[:2] == ["ip", "-n"] for argv in links)


def test_three_control_hosts_and_a_database_host_each_have_one_fabric_link(
    tmp_path: Path,
) -> None:
    runner, mounts = RecordingRunner(StateFile(tmp_path, "lab")), FakeMounts()
    Lab("lab", tmp_path, mounts=mounts, run=runner).up(hosts=1, control=3)
    created = [argv[3] for argv in runner.commands if argv[:3] == ["ip", "netns", "add"]]
    assert created[2:6] == ["lab-ctl", "lab-ctl2", "lab-ctl3", "lab-db"]
    assert runner.unrecorded == []
    ports = [argv[5] for argv in runner.commands if argv[2:5] == ["lab-fab", "link", "add"]]
    addresses = {argv[2]: argv[5] for argv in runner.commands if argv[3:5] == ["addr", "add"]}
    assert {"c-fab", "c2-fab", "c3-fab", "d-fab"} <= set(ports)  # each on the fabric
    state = StateFile(tmp_path, "lab").load()
    assert state is not None and state.control == 3
    fab = ipaddress.IPv4Network(state.networks["fab"])
    assert [addresses[ns] for ns in created[2:6]] == [
        f"{fab.network_address + host}/24" for host in (2, 3, 4, 9)
    ]
    names = LabNames("lab")
    assert all(names.is_ours(ns) for ns in created)
    assert [control_index(x) for x in ("ctl", "ctl2", "ctl3", "ctl1", "ctlx", "h1")] == [
        1, 2, 3, 0, 0, 0,
    ]  # fmt: skip


def test_up_refuses_an_existing_lab_and_changes_nothing(tmp_path: Path) -> None:
    runner = RecordingRunner(StateFile(tmp_path, "lab"), existing="lab-h1 (id: 3)\n")
    with pytest.raises(LabExists):
        Lab("lab", tmp_path, mounts=FakeMounts(), run=runner).up(hosts=2)
    assert runner.commands == [["ip", "netns", "list"]]
    assert not StateFile(tmp_path, "lab").exists()


@pytest.mark.parametrize(("hosts", "members"), [(0, 1), (201, 1), (2, 0), (2, 10)])
def test_up_refuses_bad_sizes_before_running_anything(
    tmp_path: Path, hosts: int, members: int
) -> None:
    runner = RecordingRunner(StateFile(tmp_path, "lab"))
    with pytest.raises(LabError):
        Lab("lab", tmp_path, mounts=FakeMounts(), run=runner).up(hosts, members)
    assert runner.commands == []


def test_picked_networks_overlap_nothing_in_use_nor_each_other() -> None:
    used = [ipaddress.IPv4Network("10.0.0.0/9"), ipaddress.IPv4Network("10.128.0.0/10")]
    picked = pick_networks(20, used, random.Random(7))
    assert len(set(picked)) == 20
    assert not any(net.overlaps(other) for net in picked for other in used)


def test_a_larger_vip_network_is_picked_aligned_and_given_to_the_hosts(tmp_path: Path) -> None:
    runner = RecordingRunner(StateFile(tmp_path, "lab"))
    Lab("lab", tmp_path, mounts=FakeMounts(), run=runner).up(hosts=2, vip_prefix=18)
    state = StateFile(tmp_path, "lab").load()
    assert state is not None
    vip = ipaddress.IPv4Network(state.networks["vip"])  # strict: aligned on its /18
    assert vip.prefixlen == 18
    assert all(ipaddress.IPv4Network(state.networks[n]).prefixlen == 24 for n in ("fab", "m0"))
    addresses = [argv[5] for argv in runner.commands if argv[3:5] == ["addr", "add"]]
    assert f"{vip.network_address + 11}/18" in addresses  # h1's VIP-network address
    with pytest.raises(LabError, match="/16 to a /24"):
        Lab("other", tmp_path, mounts=FakeMounts(), run=runner).up(hosts=1, vip_prefix=25)


def test_no_free_network_is_a_clear_error() -> None:
    with pytest.raises(LabError, match="no free"):
        pick_networks(1, [ipaddress.IPv4Network("10.0.0.0/8")], random.Random(1))


def test_names_fit_linux_limits_and_identify_the_labs_own_namespaces() -> None:
    names = LabNames("abcdefghijkl")
    assert names.is_ours(names.host(12)) and names.is_ours(names.fabric)
    assert not LabNames("lab").is_ours("lab2-h1") and not LabNames("lab").is_ours("lab-x")
    longest = [host_port(200, "m8"), bridge("m8"), inner_interface("m8"), host_port(200, "vip")]
    assert all(len(name) <= 15 for name in longest)


def test_the_state_file_round_trips_with_its_processes(tmp_path: Path) -> None:
    state = LabState("lab", 2, 1, {"fab": "10.70.0.0/24"}, ["lab-fab"], True, [2])
    state.processes["h1"] = [RegisteredProcess(123, 456, "agent")]
    state.code = {"h1": "/var/tmp/lbaas-lab-trees/abc", "ctl/api": ""}
    store = StateFile(tmp_path, "lab")
    store.save(state)
    assert store.load() == state
    saved = json.loads(store.path.read_text())
    assert saved["processes"]["h1"] == [{"pid": 123, "start_time": 456, "role": "agent"}]
    assert saved["code"]["h1"] == "/var/tmp/lbaas-lab-trees/abc"
    assert store.path.stat().st_mode & 0o777 == 0o600


def test_a_state_file_without_roles_or_code_trees_still_loads(tmp_path: Path) -> None:
    """A lab built before processes had roles and code trees is still taken down."""
    store = StateFile(tmp_path, "lab")
    store.save(LabState("lab", 1, 1))
    older = json.loads(store.path.read_text())
    del older["code"]
    older["processes"] = {"h1": [{"pid": 7, "start_time": 8}]}
    store.path.write_text(json.dumps(older))
    loaded = store.load()
    assert loaded is not None and loaded.code == {}
    assert loaded.processes["h1"] == [RegisteredProcess(7, 8, "")]


def test_host_commands_on_a_lab_that_is_not_up_are_refused(tmp_path: Path) -> None:
    lab = Lab(
        "lab",
        tmp_path,
        mounts=FakeMounts(),
        run=RecordingRunner(StateFile(tmp_path, "lab")),
    )
    with pytest.raises(LabError, match="not up"):
        lab.partition("h1")
    lab.up(hosts=2)
    with pytest.raises(LabError, match="h1-h2"):
        lab.host_down("h3")
    assert lab.status()["hosts"]["h2"]["addresses"]["vip"].endswith(".12/24")


def test_down_without_a_readable_state_file_removes_the_labs_namespaces_by_name(
    tmp_path: Path,
) -> None:
    store = StateFile(tmp_path, "lab")
    store.path.parent.mkdir()
    store.path.write_text('{"name": "lab", "hos')  # cut short
    runner = RecordingRunner(store, existing="lab-h1\nlab2-h1\nlab-fab (id: 2)\nother\n")
    removed = Lab("lab", tmp_path, mounts=FakeMounts(), run=runner).down()
    assert removed == ["lab-h1", "lab-fab"]
    deleted = [argv[3] for argv in runner.commands if argv[:3] == ["ip", "netns", "delete"]]
    assert deleted == ["lab-h1", "lab-fab"] and not store.exists()


def test_down_removes_the_labs_access_log_sockets_and_no_other_labs(tmp_path: Path) -> None:
    if not os.access("/run", os.W_OK):
        pytest.skip("needs to write below /run")
    name, other = (f"u{secrets.token_hex(4)}" for _ in range(2))
    sockets = [LabNames(lab).log_sockets / "h1" / "0123.sock" for lab in (name, other)]
    try:
        for path in sockets:
            path.parent.mkdir(parents=True)
            path.write_bytes(b"")  # a socket left by an agent killed with the lab
        lab = Lab(
            name,
            tmp_path,
            mounts=FakeMounts(),
            run=RecordingRunner(StateFile(tmp_path, name)),
        )
        lab.up(hosts=1)
        lab.down()
        assert not LabNames(name).log_sockets.exists()
        assert sockets[1].exists()
    finally:
        for lab in (name, other):
            shutil.rmtree(LabNames(lab).log_sockets, ignore_errors=True)


def test_every_host_has_its_own_mount_namespace_and_no_directory_of_another(
    tmp_path: Path,
) -> None:
    runner, mounts = RecordingRunner(StateFile(tmp_path, "lab")), FakeMounts()
    lab = Lab("lab", tmp_path, mounts=mounts, run=runner).up(hosts=3, control=3)
    hosts = ["rtr", "ctl", "ctl2", "ctl3", "db", "h1", "h2", "h3", "cli"]
    assert mounts.names() == sorted(f"lab-{host}" for host in hosts)  # not the fabric
    # What a host binds of its own (the software below /tmp, when the checkout is there,
    # is bound alike in every host: it is no host's own).
    bound = [p for files in mounts.created.values() for p in (*files.own, *files.crossed)]
    assert len(bound) == len(set(bound))
    assert not any(a != b and a.is_relative_to(b) for a in bound for b in bound)
    assert len({files.software for files in mounts.created.values()}) == 1
    for files in mounts.created.values():  # every lab's state, sockets, databases, links
        assert lab.services_dir.parent in files.hidden
        assert Path("/run/lbaas-links") in files.hidden
        owned = (*files.own, *files.crossed)
        assert all(any(p.is_relative_to(h) for h in files.hidden) for p in owned)
    h1 = mounts.created["lab-h1"]
    assert h1.own == (lab.services_dir / "h1", lab.services_dir / "tier" / "h1")
    assert h1.crossed == (LabNames("lab").log_sockets / "h1",)  # HAProxy's workers cross it
    assert mounts.created["lab-rtr"].own == (
        lab.services_dir / "tier" / "rtr",
        lab.services_dir / "tier" / "watch",
    )
    assert LabNames("lab").database_dir in mounts.created["lab-db"].own
    lab.down()
    assert mounts.names() == []
