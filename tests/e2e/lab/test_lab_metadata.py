"""Metadata proxies across the lab's hosts: one per network per host, signed instance ids.

One lab (two hosts) for the module. Two tenant networks with the same CIDR, and instances
on both hosts holding the same addresses on them: each asks 169.254.169.254 from inside its
own namespace and gets its own instance id and hostname from its own host's proxy. Forged
identity headers (even signed with the real secret) give the forger its own answer; the
metadata service refuses a wrong signature sent to it directly; an address with no port
gets 404. The metadata port never answers across hosts. Removing a network's last port
on a host removes that proxy's namespace and HAProxy; an agent restarted after ports
changed while it was away keeps exactly the proxies still needed.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_probe import lab_links

from lbaas.host.commands import run_command
from lbaas.lab.instances import Instances
from lbaas.lab.lab import Lab
from lbaas.lab.netns import Netns
from lbaas.lab.services import SETTINGS_FILE, start_agent, start_services
from lbaas.lab.state import process_running
from lbaas.metadata import signing
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.haproxy]

META = "http://169.254.169.254"
WAIT = 60.0
# (host, network, address): both networks 10.0.0.0/24, both addresses on both hosts.
LAYOUT = [
    ("h1", "net1", "10.0.0.5"),
    ("h2", "net2", "10.0.0.5"),
    ("h2", "net1", "10.0.0.6"),
    ("h1", "net2", "10.0.0.6"),
]


class MetaLab:
    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.instances = Instances(lab, Netns(run_command))
        self.vms: dict[str, dict[str, Any]] = {}

    def add(self, host: str, network: str, address: str) -> dict[str, Any]:
        record = self.instances.add(host, network, address, cidr="10.0.0.0/24")
        self.vms[record["name"]] = record
        return record

    def proxies(self, host: str) -> set[str]:
        """Network ids with a proxy namespace on ``host``."""
        start = f"{self.lab.names.host_prefix(int(host[1:]))}meta-"
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return {
            line.split()[0][len(start) :] for line in names.splitlines() if line.startswith(start)
        }

    def haproxy_pids(self, host: str, network_id: str) -> list[int]:
        namespace = f"{self.lab.names.host_prefix(int(host[1:]))}meta-{network_id}"
        done = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
        return [int(p) for p in done.stdout.split()]

    def diagnostics(self, vm: dict[str, Any]) -> str:
        """What a failure needs: the host agent's log, namespaces, the last curl's error."""
        log = (self.lab.services_dir / vm["host"] / "agent.log").read_text()[-3000:]
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        argv = ["ip", "netns", "exec", vm["namespace"], "curl", "-sS", "-m", "3", META]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        return f"agent log:\n{log}\nnamespaces:\n{names}\ncurl: {done.stderr}"

    def secret(self) -> bytes:
        settings = self.lab.services_dir / "ctl" / SETTINGS_FILE
        return str(tomllib.loads(settings.read_text())["metadata"]["shared_secret"]).encode()


def curl(namespace: str, url: str, *options: str, timeout: float = 5.0) -> tuple[int, str]:
    """(HTTP status, body) of a GET from inside ``namespace``; status 0 when none came."""
    argv = ["ip", "netns", "exec", namespace, "curl", "-sS", "-m", str(timeout)]
    argv += [*options, "-w", "\n%{http_code}", url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 30)
    body, _, code = done.stdout.rpartition("\n")
    return int(code or 0), body


def answers(vm: dict[str, Any], path: str = "/latest/meta-data/instance-id") -> str | None:
    status, body = curl(vm["namespace"], META + path)
    return body if status == 200 else None


@pytest.fixture(scope="module")
def meta() -> Iterator[MetaLab]:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    name = f"m{uuid.uuid4().hex[:7]}"
    directory = Path(tempfile.mkdtemp(prefix="lab", dir="/tmp"))
    lab = Lab(name, directory)
    try:
        with lab.running(hosts=2):
            start_services(lab)
            built = MetaLab(lab)
            for host, network, address in LAYOUT:
                built.add(host, network, address)
            yield built
        assert lab_links(f"{name}-") == []
    finally:
        subprocess.run(["rm", "-rf", str(directory)], check=False)


def test_each_instance_gets_its_own_id_and_hostname(meta: MetaLab) -> None:
    for vm in meta.vms.values():
        try:
            wait_until(lambda vm=vm: answers(vm) is not None, WAIT, f"metadata for {vm['name']}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{meta.diagnostics(vm)}") from None
    for vm in meta.vms.values():
        assert answers(vm) == vm["instance_id"]
        assert answers(vm, "/latest/meta-data/hostname") == vm["hostname"]
        assert answers(vm, "/latest/meta-data/local-ipv4") == vm["address"]
        status, body = curl(vm["namespace"], META + "/openstack/latest/meta_data.json")
        assert status == 200 and f'"uuid":"{vm["instance_id"]}"' in body
    # One proxy per network per host: both hosts have instances on both networks.
    networks = {vm["network_id"] for vm in meta.vms.values()}
    assert meta.proxies("h1") == networks and meta.proxies("h2") == networks


def test_forged_identity_gets_its_own_answer(meta: MetaLab) -> None:
    forger, victim = meta.vms["net1-10-0-0-5"], meta.vms["net2-10-0-0-5"]
    secret = meta.secret()  # the real secret: even a correct signature is not honoured
    forged = [
        "-H", f"X-Instance-ID: {victim['instance_id']}",
        "-H", f"X-Instance-ID-Signature: {signing.sign(secret, victim['instance_id'])}",
        "-H", f"X-Tenant-ID: {victim['project_id']}",
        "-H", f"X-Neutron-Network-ID: {victim['network_id']}",
        "-H", "X-Forwarded-For: 10.0.0.6",
    ]  # fmt: skip
    status, body = curl(forger["namespace"], META + "/latest/meta-data/instance-id", *forged)
    assert (status, body) == (200, forger["instance_id"])
    status, body = curl(forger["namespace"], META + "/latest/meta-data/hostname", *forged)
    assert (status, body) == (200, forger["hostname"])


def test_wrong_signature_to_the_service_is_refused(meta: MetaLab) -> None:
    vm = meta.vms["net1-10-0-0-5"]
    ctl = meta.lab.names.control
    url = "http://127.0.0.1:9876/latest/meta-data/instance-id"
    identity = [
        "-H",
        f"X-Instance-ID: {vm['instance_id']}",
        "-H",
        f"X-Tenant-ID: {vm['project_id']}",
    ]
    wrong = signing.sign(b"not the secret", vm["instance_id"])
    assert curl(ctl, url, *identity, "-H", f"X-Instance-ID-Signature: {wrong}")[0] == 403
    assert curl(ctl, url, *identity)[0] == 403
    right = signing.sign(meta.secret(), vm["instance_id"])
    assert curl(ctl, url, *identity, "-H", f"X-Instance-ID-Signature: {right}") == (
        200,
        vm["instance_id"],
    )


def test_a_source_with_no_port_gets_404_and_is_logged(meta: MetaLab) -> None:
    vm = meta.vms["net1-10-0-0-5"]
    run_command(["ip", "-n", vm["namespace"], "addr", "add", "10.0.0.99/24", "dev", "eth0"])
    try:
        status, _ = curl(
            vm["namespace"], META + "/latest/meta-data/instance-id", "--interface", "10.0.0.99"
        )
    finally:
        run_command(["ip", "-n", vm["namespace"], "addr", "del", "10.0.0.99/24", "dev", "eth0"])
    assert status == 404
    log = (meta.lab.services_dir / "h1" / "agent.log").read_text()
    assert f"from 10.0.0.99 on network {vm['network_id']}: no port" in log


def test_metadata_port_answers_on_its_own_host_only(meta: MetaLab) -> None:
    vm = meta.vms["net1-10-0-0-5"]
    proxy = f"{meta.lab.names.host_prefix(1)}meta-{vm['network_id']}"
    # h1's proxy port unplugged: h2's proxy on the same network must not answer instead.
    run_command(["ip", "-n", proxy, "link", "set", "eth0", "down"])
    try:
        run_command(["ip", "-n", vm["namespace"], "neigh", "flush", "all"])
        status, _ = curl(vm["namespace"], META + "/latest/meta-data/instance-id", timeout=3.0)
        assert status == 0
        assert answers(meta.vms["net1-10-0-0-6"]) == meta.vms["net1-10-0-0-6"]["instance_id"]
    finally:
        run_command(["ip", "-n", proxy, "link", "set", "eth0", "up"])
        run_command(["ip", "-n", proxy, "route", "replace", "default", "dev", "eth0"])
    wait_until(lambda: answers(vm) == vm["instance_id"], WAIT, "h1's proxy back")


def test_last_port_of_a_network_leaving_a_host_removes_its_proxy(meta: MetaLab) -> None:
    vm = meta.vms.pop("net2-10-0-0-6")  # h1's only port on net2
    pids = meta.haproxy_pids("h1", vm["network_id"])
    assert pids
    meta.instances.remove(vm["name"])
    wait_until(lambda: vm["network_id"] not in meta.proxies("h1"), WAIT, "h1's net2 proxy gone")
    wait_until(lambda: not any(process_running(p) for p in pids), WAIT, "its HAProxy gone")
    assert vm["network_id"] in meta.proxies("h2")  # h2 still has an instance on net2
    survivor = meta.vms["net1-10-0-0-5"]
    assert answers(survivor) == survivor["instance_id"]


def test_agent_restart_keeps_exactly_the_needed_proxies(meta: MetaLab) -> None:
    meta.lab.kill_registered("h1")
    # While h1's agent is away: its last net1 port leaves, a port on a new network arrives.
    gone = meta.vms.pop("net1-10-0-0-5")
    meta.instances.remove(gone["name"])
    new = meta.add("h1", "net3", "10.0.0.5")
    assert gone["network_id"] in meta.proxies("h1") and new["network_id"] not in meta.proxies("h1")
    start_agent(meta.lab, "h1")
    try:
        wait_until(
            lambda: meta.proxies("h1") == {new["network_id"]}, WAIT, "h1's proxies re-synced"
        )
    except AssertionError as exc:
        found = f"proxies on h1: {meta.proxies('h1')}, wanted {new['network_id']}"
        raise AssertionError(f"{exc}\n{found}\n{meta.diagnostics(new)}") from None
    wait_until(lambda: answers(new) == new["instance_id"], WAIT, "the new instance answered")
    assert not meta.haproxy_pids("h1", gone["network_id"])
