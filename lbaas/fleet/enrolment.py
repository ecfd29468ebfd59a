"""An agent's enrolment bundle: everything a new host needs to join the fleet.

``lbaas agent enrol HOST_ID`` (on the control plane, which holds the CA) writes one
directory for the new host:

* ``ca.pem`` — the project's CA, the only trust anchor of the agent's HTTPS API;
* ``agent.pem``/``agent.key`` — the host's server certificate, naming
  ``<host_id>.agents.lbaas`` (and its address), which the controller checks on every call;
* ``heartbeat.key`` — the HMAC key of the heartbeats (0600);
* ``agent.toml`` — the agent's settings: host id, address, port, zone, capacity, the
  health managers to send heartbeats to, and ``agent.bundle`` pointing at this directory.

Copy it to the host and start ``lbaas --config DIR/agent.toml agent``. The private files
are written 0600 in a 0700 directory; the bundle holds secrets and travels as such.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lbaas.certs.authority import CertificateAuthority, TlsFiles, write_private, write_public
from lbaas.errors import ConfigError
from lbaas.model.fleet import agent_server_name, valid_host_id
from lbaas.private_files import make_private_directory

CERT_FILE = "agent.pem"
KEY_FILE = "agent.key"
CA_FILE = "ca.pem"
HEARTBEAT_KEY_FILE = "heartbeat.key"
SETTINGS_FILE = "agent.toml"


@dataclass(frozen=True)
class Enrolment:
    """Who the new host is and how the fleet reaches it."""

    host_id: str
    address: str
    port: int
    zone: str
    capacity: int
    health_managers: tuple[str, ...]
    mode: str = "loopback"


def bundle_tls(directory: Path) -> TlsFiles:
    """The TLS files of a bundle, as the agent's HTTPS server loads them."""
    return TlsFiles(directory / CERT_FILE, directory / KEY_FILE, directory / CA_FILE)


def identity_names(host_id: str, address: str) -> tuple[list[str], list[str]]:
    """(IP SANs, DNS SANs) of a host's certificate: its fleet name and its address."""
    dns = [agent_server_name(host_id)]
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return [], [*dns, address]
    return [address], dns


def check_enrolment(enrolment: Enrolment) -> None:
    if not valid_host_id(enrolment.host_id):
        raise ConfigError(
            f"host id {enrolment.host_id!r} must be one lower-case DNS label (a-z, 0-9, -)"
        )
    if enrolment.capacity < 1 or not 0 < enrolment.port < 65536:
        raise ConfigError("capacity must be positive and port within 1-65535")
    for manager in enrolment.health_managers:
        host, _, port = manager.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigError(f"health manager {manager!r} is not host:port")


def write_bundle(
    ca: CertificateAuthority, enrolment: Enrolment, heartbeat_key: bytes, out: Path
) -> Path:
    """Issue the host's certificate and write the bundle into ``out``; returns it."""
    check_enrolment(enrolment)
    make_private_directory(out)
    ips, dns = identity_names(enrolment.host_id, enrolment.address)
    issued = ca.issue(enrolment.host_id, "server", ip_addresses=ips, dns_names=dns)
    write_private(out / KEY_FILE, issued.key_pem)
    write_public(out / CERT_FILE, issued.cert_pem)
    write_public(out / CA_FILE, ca.ca_file.read_bytes())
    write_private(out / HEARTBEAT_KEY_FILE, heartbeat_key + b"\n")
    write_private(out / SETTINGS_FILE, _settings_toml(enrolment, out).encode())
    return out


def _settings_toml(enrolment: Enrolment, out: Path) -> str:
    # JSON strings are valid TOML basic strings for everything written here.
    def q(value: str) -> str:
        return json.dumps(value)

    managers = ", ".join(q(m) for m in enrolment.health_managers)
    return (
        "# Written by lbaas agent enrol; start with: lbaas --config THIS_FILE agent\n"
        "[agent]\n"
        f"host_id = {q(enrolment.host_id)}\n"
        f"host = {q(enrolment.address)}\n"
        f"port = {enrolment.port}\n"
        f"zone = {q(enrolment.zone)}\n"
        f"capacity = {enrolment.capacity}\n"
        f"mode = {q(enrolment.mode)}\n"
        f"bundle = {q(str(out.absolute()))}\n"
        f"health_managers = [{managers}]\n"
    )


def parse_managers(text: Sequence[str]) -> tuple[str, ...]:
    """Health managers from command-line values, each possibly comma-separated."""
    return tuple(part.strip() for item in text for part in item.split(",") if part.strip())
