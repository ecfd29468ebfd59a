"""ACTIVE_STANDBY on the agent: one amphora's keepalived, converged to its spec.

The controller sends the pair's VRRP facts (``VrrpSpec``); the agent knows the rest (the
link the VIP leg got, where the amphora's files and HAProxy socket are) and renders the
keepalived configuration here with ``lbaas.render.keepalived``. A new configuration is
checked with ``keepalived --config-test`` before it replaces the installed one, then
keepalived is started or sent SIGHUP (VRRP state survives a reload). The VIP is
keepalived's: HAProxy binds it on both amphorae, so the namespace allows binding an
address it does not hold (``ip_nonlocal_bind``), as a real amphora does.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

from lbaas.host.base import HostCommandFailed, HostOps, KeepalivedFiles, KeepalivedOps
from lbaas.private_files import write_private
from lbaas.render.keepalived import VrrpConfig, render_keepalived_config
from lbaas.wire.amphora import AmphoraSpec, VrrpSpec

log = logging.getLogger(__name__)

#: The states the agent reports; keepalived's STOP (shutting down) is not one of them.
VRRP_STATES = frozenset({"MASTER", "BACKUP", "FAULT"})

NONLOCAL_BIND = ("net.ipv4.ip_nonlocal_bind=1", "net.ipv6.ip_nonlocal_bind=1")


def check_script() -> str:
    """The HAProxy check keepalived runs (shipped inside the package)."""
    return str(files("lbaas.amphora").joinpath("scripts/haproxy-check"))


def notify_script() -> str:
    """The script keepalived runs on each state change (shipped inside the package)."""
    return str(files("lbaas.amphora").joinpath("scripts/vrrp-state"))


def vrrp_config(
    amphora_id: str,
    spec: AmphoraSpec,
    vrrp: VrrpSpec,
    interface: str,
    runtime_socket: str,
    state_file: Path | None = None,
) -> VrrpConfig:
    """The keepalived configuration of this amphora of the pair."""
    prefix = ipaddress.ip_network(spec.vip.subnet_cidr, strict=False).prefixlen
    return VrrpConfig(
        instance_name=f"lb_{spec.loadbalancer_id.replace('-', '')[:32]}",
        virtual_router_id=vrrp.vrrp_id,
        priority=vrrp.priority,
        interface=interface,
        own_address=vrrp.own_address,
        peer_address=vrrp.peer_address,
        vip=f"{spec.vip.address}/{prefix}",
        check_command=(check_script(), runtime_socket),
        notify_command=None if state_file is None else (notify_script(), str(state_file)),
        advert_interval_ms=vrrp.advert_interval_ms,
        realtime_priority=vrrp.realtime_priority,
    )


def allow_nonlocal_bind(host: HostOps, namespace: str) -> None:
    """Let HAProxy bind the VIP in ``namespace`` while keepalived has not added it."""
    for setting in NONLOCAL_BIND:
        done = host.run_in_namespace(namespace, ["sysctl", "-q", "-w", setting])
        if done.returncode != 0:
            raise HostCommandFailed(["sysctl", "-w", setting], done.returncode, done.stderr)


class KeepalivedInstance:
    """The keepalived of one amphora: its files, and converging them to a config."""

    def __init__(self, directory: Path, ops: KeepalivedOps, namespace: str) -> None:
        self.files = KeepalivedFiles.in_directory(directory)
        self.namespace = namespace
        self._ops = ops
        self.reloads = 0

    def apply(self, config: VrrpConfig) -> None:
        """Install ``config`` (checked first) and make keepalived run it."""
        text = render_keepalived_config(config)
        installed = self._installed()
        if installed != text:
            candidate = self.files.config.with_suffix(".new")
            write_private(candidate, text)
            try:
                self._ops.validate(replace(self.files, config=candidate), self.namespace)
            except Exception:
                candidate.unlink(missing_ok=True)
                raise
            candidate.replace(self.files.config)
        if self._ops.pid(self.files) is None:
            self._ops.start(self.files, self.namespace)
        elif installed != text:
            self._ops.reload(self.files)
            self.reloads += 1

    def ensure_running(self) -> bool:
        """Start keepalived again if it died; whether it had to be started."""
        if not self.files.config.exists() or self._ops.pid(self.files) is not None:
            return False
        self._ops.start(self.files, self.namespace)
        return True

    def pid(self) -> int | None:
        return self._ops.pid(self.files)

    def state(self) -> str | None:
        """The VRRP state keepalived last entered (MASTER, BACKUP, FAULT), or None when
        it is not running or has not said: a dead keepalived holds no VIP for long (its
        peer takes it) and must not be reported MASTER from an old file."""
        if self.pid() is None:
            return None
        try:
            word = self.files.state_file.read_text().strip()
        except OSError:
            return None
        return word if word in VRRP_STATES else None

    def stop(self) -> None:
        self._ops.stop(self.files)
        self.files.state_file.unlink(missing_ok=True)

    def _installed(self) -> str | None:
        try:
            return self.files.config.read_text()
        except OSError:
            return None
