"""A real HAProxy: what runs is what was acknowledged, tool output never crashes the
agent, and the agent's files and HAProxy's workers are private to their owners."""

from __future__ import annotations

import os
import pwd
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from agent_e2e_support import (
    Backend,
    Server,
    free_port,
    haproxy_config,
    http_get,
    random_loopback,
    report_of,
)

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.errors import InvalidRenderedConfig
from lbaas.host.loopback import LoopbackHostOps
from lbaas.host.runtime_api import MasterCli
from lbaas.wire.amphora import AmphoraSpec, VipSpec

pytestmark = pytest.mark.haproxy
AMPHORA = "amp-loaded"
KILLED_AGENT = Path(__file__).with_name("killed_agent.py")


def _spec(
    root: Path, vip: str, port: int, backends: list[Backend], version: int, extra: str = ""
) -> AmphoraSpec:
    servers = [Server(f"m{i}", b.address, b.port) for i, b in enumerate(backends)]
    fields = haproxy_config(root / AMPHORA, vip, port, servers)
    fields["haproxy_config"] += extra
    return AmphoraSpec(
        version=version,
        loadbalancer_id="lb-loaded",
        **fields,
        vip=VipSpec(address=vip, subnet_cidr=f"{vip}/8", network_id="lo"),
    )


def _serves(vip: str, port: int) -> bool:
    try:
        return http_get(vip, port, timeout=3) in ("backend-a", "backend-b")
    except OSError:
        return False


def test_a_listener_installed_by_an_agent_killed_before_its_reload_is_served_by_the_retry(
    short_dir: Path, backends: list[Backend]
) -> None:
    root, vip = short_dir / "amphorae", random_loopback()
    old_port, new_port = free_port(vip), free_port(vip)
    old, new = short_dir / "old.json", short_dir / "new.json"
    old.write_text(_spec(root, vip, old_port, backends, 1).model_dump_json())
    new.write_text(_spec(root, vip, new_port, backends, 2).model_dump_json())
    next_life = AmphoraRegistry(root, LoopbackHostOps())
    try:
        killed = subprocess.run(
            [sys.executable, str(KILLED_AGENT), str(root), AMPHORA, str(old), str(new)],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr.decode(errors="replace")
        assert _serves(vip, old_port) and not _serves(vip, new_port)
        assert next_life.restore() == [AMPHORA]
        spec = AmphoraSpec.model_validate_json(new.read_bytes())
        retried = next_life.put(AMPHORA, spec)  # the controller's retry
        assert retried.last_outcome == "RELOADED"
        assert _serves(vip, new_port) and not _serves(vip, old_port)
        assert next_life.put(AMPHORA, spec).last_outcome == "UNCHANGED"  # a resync
    finally:
        next_life.delete(AMPHORA)


def test_full_width_digits_are_a_validation_error_not_a_crash(
    manager: AmphoraRegistry, backends: list[Backend], short_dir: Path
) -> None:
    vip = random_loopback()
    # HAProxy quotes one byte of the first full-width digit: not UTF-8 on its own.
    extra = "backend be_extra\n    option httpchk\n    http-check expect status ２００\n"
    spec = _spec(manager.root, vip, free_port(vip), backends, 1, extra)
    with pytest.raises(InvalidRenderedConfig) as refused:
        manager.put(AMPHORA, spec)
    assert "invalid character" in (refused.value.operator_message or "")
    status = manager.get(AMPHORA)
    assert status is not None and "invalid character" in (status.last_error or "")
    assert manager.put(AMPHORA, _spec(manager.root, vip, free_port(vip), backends, 2)).running


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping privileges needs a root agent")
def test_files_are_private_and_workers_run_unprivileged(
    manager: AmphoraRegistry, backends: list[Backend]
) -> None:
    vip = random_loopback()
    port = free_port(vip)
    manager.put(AMPHORA, _spec(manager.root, vip, port, backends, 1))
    directory = manager.root / AMPHORA
    assert _mode(manager.root) == _mode(directory) == 0o700
    for name in ("haproxy.cfg", "haproxy.facts.json", "applied.json", "haproxy.log"):
        assert _mode(directory / name) == 0o600, name
    haproxy = pwd.getpwnam("haproxy")
    table = MasterCli.at(directory / "master.sock").show_proc()
    assert table.current_workers
    for worker in table.workers:
        assert _ids(worker.pid, "Uid") == {haproxy.pw_uid}
        assert _ids(worker.pid, "Gid") == {haproxy.pw_gid}
    assert _ids(table.master.pid, "Uid") == {0}  # the master keeps root to bind on reloads
    assert _serves(vip, port)
    assert report_of(manager, AMPHORA).listeners  # the stats socket answers


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _ids(pid: int, field: str) -> set[int]:
    """The real, effective, saved and file-system ids of ``pid`` (``Uid:``/``Gid:``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return {int(value) for value in line.split()[1:]}
    raise AssertionError(f"no {field} in /proc/{pid}/status")
