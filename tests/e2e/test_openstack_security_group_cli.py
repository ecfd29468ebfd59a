"""Security groups with the unmodified ``openstack security group …`` commands against
``lbaas serve``, and a load balancer that uses one (``loadbalancer create --vip-sg-id``).

The group is created, listed and shown; rules are added by name and port range, listed
and deleted; the CLI's refusal of a bad rule carries lbaas's reason (read by openstacksdk
out of Neutron's error body); a group a load
balancer uses cannot be deleted until the load balancer lets it go.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.e2e.amphora.openstack_cli import CLI_TIMEOUT, OpenstackCli
from tests.e2e.conftest import Served

pytestmark = [pytest.mark.slow]
LOOPBACK_SUBNET = "7f000a00-0000-4000-8000-000000000001"


def _failed(cli: OpenstackCli, *args: str) -> str:
    done = subprocess.run(
        [*cli.base, *args], capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False
    )
    assert done.returncode != 0, done.stdout
    return done.stderr


def test_openstack_security_group_commands(noop_server: Served) -> None:
    cli = OpenstackCli(noop_server.url)
    group = cli.json("security", "group", "create", "--description", "front", "web")
    assert (group["name"], group["description"]) == ("web", "front")
    listed = cli.json("security", "group", "list")
    assert [g["ID"] for g in listed] == [group["id"]]
    assert cli.json("security", "group", "show", "web")["id"] == group["id"]

    rule = cli.json("security", "group", "rule", "create", "--protocol", "tcp",
                    "--dst-port", "80:90", "--remote-ip", "10.1.0.0/16", "web")  # fmt: skip
    assert (rule["port_range_min"], rule["port_range_max"]) == (80, 90)
    assert rule["remote_ip_prefix"] == "10.1.0.0/16"
    rules = cli.json("security", "group", "rule", "list", "web")
    assert rule["id"] in [r["ID"] for r in rules]
    assert len(rules) == 3  # with Neutron's two default egress rules
    refused = _failed(cli, "security", "group", "rule", "create", "--ethertype", "IPv4",
                      "--remote-ip", "2001:db8::/32", "web")  # fmt: skip
    assert "Conflicting value ethertype IPv4 for CIDR 2001:db8::/32" in refused
    # A bad value: openstacksdk reads the message out of Neutron's error body.
    refused = _failed(cli, "security", "group", "rule", "create", "--protocol", "300", "web")
    assert "BadRequestException: 400" in refused
    assert "Security group rule protocol 300 not supported." in refused
    assert "NeutronError" not in refused and "faultstring" not in refused

    # octaviaclient resolves the group's name through the Networking API.
    lb = cli.json("loadbalancer", "create", "--vip-subnet-id", LOOPBACK_SUBNET,
                  "--vip-sg-id", "web", "--wait")  # fmt: skip
    assert cli.json("loadbalancer", "show", lb["id"])["vip_sg_ids"] == [group["id"]]
    assert "in use" in _failed(cli, "security", "group", "delete", "web")
    cli.run("loadbalancer", "delete", "--wait", lb["id"])

    cli.run("security", "group", "rule", "delete", rule["id"])
    assert len(cli.json("security", "group", "rule", "list", "web")) == 2
    cli.run("security", "group", "delete", "web")
    assert cli.json("security", "group", "list") == []
