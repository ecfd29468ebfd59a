"""Instances' ports with the unmodified ``openstack port`` commands, and the metadata
service asked with curl, against ``lbaas serve``.

``openstack port create --device … --host … --fixed-ip …`` records a port the metadata
proxy can identify; ``port set --host`` moves it, ``port delete`` removes it. curl with
the installation's generated secret gets the instance's metadata; a wrong signature 403.
"""

from __future__ import annotations

import subprocess

import pytest

from lbaas.metadata import signing
from tests.e2e.amphora.openstack_cli import OpenstackCli
from tests.e2e.conftest import Served

pytestmark = [pytest.mark.slow]
LOOPBACK_SUBNET = "7f000a00-0000-4000-8000-000000000001"


def _curl(url: str, headers: dict[str, str]) -> tuple[int, str]:
    args = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", url]
    for name, value in headers.items():
        args += ["-H", f"{name}: {value}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=30, check=True)
    body, _, code = done.stdout.rpartition("\n")
    return int(code), body


def test_openstack_port_commands_and_a_signed_metadata_request(noop_server: Served) -> None:
    cli = OpenstackCli(noop_server.url)
    network = cli.json("subnet", "show", LOOPBACK_SUBNET)["network_id"]
    port = cli.json(
        "port", "create", "--network", network, "--device", "vm-cli",
        "--device-owner", "compute:nova", "--host", "h1", "--dns-name", "web-cli",
        "--fixed-ip", f"subnet={LOOPBACK_SUBNET},ip-address=127.0.10.80", "port-cli",
    )  # fmt: skip
    assert (port["device_id"], port["binding_host_id"], port["dns_name"]) == (
        "vm-cli",
        "h1",
        "web-cli",
    )
    cli.run("port", "set", "--host", "h2", "port-cli")
    assert cli.json("port", "show", "port-cli")["binding_host_id"] == "h2"
    listed = cli.json("port", "list", "--host", "h2")
    assert [p["ID"] for p in listed] == [port["id"]]

    secret = (noop_server.state_dir / signing.SECRET_FILE).read_text().strip().encode()
    project = port["project_id"]
    url = f"{noop_server.url}/latest/meta-data/hostname"
    good = {
        signing.INSTANCE_ID: "vm-cli",
        signing.SIGNATURE: signing.sign(secret, "vm-cli"),
        signing.TENANT_ID: project,
    }
    assert _curl(url, good) == (200, "web-cli")
    assert _curl(url, {**good, signing.SIGNATURE: signing.sign(b"x" * 32, "vm-cli")})[0] == 403
    assert _curl(url, {signing.INSTANCE_ID: "vm-cli", signing.TENANT_ID: project})[0] == 403

    cli.run("port", "delete", "port-cli")
    assert cli.json("port", "list", "--host", "h2") == []
    assert _curl(url, good)[0] == 404
