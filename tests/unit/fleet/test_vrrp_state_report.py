"""Who holds the VIP, from keepalived's notify script to the host heartbeat's payload.

keepalived runs the shipped ``vrrp-state`` script on every state change; the agent reads
the word it leaves (only while keepalived runs) and the host heartbeat carries it, with
the agent certificate's expiry, to the health manager, which refuses a malformed one.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lbaas.amphora.vrrp import KeepalivedInstance, notify_script
from lbaas.certs.authority import CertificateAuthority, certificate_expiry
from lbaas.errors import HeartbeatRejected
from lbaas.fleet.agent_service import agent_identity
from lbaas.host.base import KeepalivedFiles, KeepalivedOps
from lbaas.model.fleet import HostAnnouncement
from lbaas.wire.heartbeat.host_codec import from_host_payload, host_sender, to_host_payload


class FakeKeepalived(KeepalivedOps):
    """keepalived's process as a pid that a test sets; nothing is started."""

    def __init__(self) -> None:
        self.running: int | None = None

    def validate(self, files: KeepalivedFiles, namespace: str) -> None:
        return None

    def start(self, files: KeepalivedFiles, namespace: str) -> int:
        self.running = 4242
        return self.running

    def reload(self, files: KeepalivedFiles) -> None:
        return None

    def stop(self, files: KeepalivedFiles) -> None:
        self.running = None

    def pid(self, files: KeepalivedFiles) -> int | None:
        return self.running


def notify(state_file: Path, state: str) -> int:
    """Run the shipped script the way keepalived does: our argument, then keepalived's."""
    argv = [notify_script(), str(state_file), "INSTANCE", "lb_x", state, "200"]
    return subprocess.run(argv, check=False, timeout=10).returncode


def test_the_notify_script_leaves_the_state_the_agent_reports(tmp_path: Path) -> None:
    ops = FakeKeepalived()
    instance = KeepalivedInstance(tmp_path, ops, "ns")
    state_file = instance.files.state_file
    ops.start(instance.files, "ns")
    assert instance.state() is None  # keepalived has not said anything yet
    for state in ("BACKUP", "MASTER", "FAULT"):
        assert notify(state_file, state) == 0
        assert instance.state() == state
    assert notify(state_file, "bogus; reboot") == 1
    assert instance.state() == "FAULT"
    assert notify(state_file, "STOP") == 0  # keepalived shutting down: not a state to report
    assert instance.state() is None
    notify(state_file, "MASTER")
    ops.running = None  # killed: an old MASTER word must not be reported
    assert instance.state() is None
    ops.running = 1
    instance.stop()
    assert not state_file.exists()


def test_the_host_heartbeat_carries_vrrp_states_and_the_cert_expiry(tmp_path: Path) -> None:
    ca = CertificateAuthority.load_or_create(tmp_path / "pki")
    tls = agent_identity(ca, tmp_path / "pki", "127.0.0.1", "host-1")
    expiry = certificate_expiry(tls.cert)
    assert expiry is not None and expiry > 0
    assert certificate_expiry(tmp_path / "missing.pem") is None
    seen = HostAnnouncement(
        "host-1",
        "127.0.0.1",
        9443,
        "az",
        4,
        ("a-1", "a-2"),
        vrrp=(("a-1", "MASTER"), ("a-2", "FAULT")),
        cert_expiration=expiry,
    )
    assert from_host_payload(to_host_payload(seen), host_sender("host-1")) == seen
    older = to_host_payload(seen)
    del older["vrrp"], older["cert_expiration"]  # an agent of the previous version
    decoded = from_host_payload(older, host_sender("host-1"))
    assert (decoded.vrrp, decoded.cert_expiration) == ((), None)


@pytest.mark.parametrize(
    "change",
    [
        {"vrrp": {"a-1": "PRIMARY"}},
        {"vrrp": ["a-1", "MASTER"]},
        {"cert_expiration": "tomorrow"},
        {"cert_expiration": True},
        {"cert_expiration": -5},
    ],
)
def test_a_malformed_host_report_is_refused(change: dict[str, object]) -> None:
    seen = HostAnnouncement("host-1", "127.0.0.1", 9443, "az", 4, ("a-1",))
    payload = {**to_host_payload(seen), **change}
    with pytest.raises(HeartbeatRejected):
        from_host_payload(payload, host_sender("host-1"))
