"""A state directory too long for HAProxy's UNIX sockets (issue 31, point 3).

HAProxy takes socket paths of at most 97 bytes; an amphora's master socket is
``<state>/amphorae/<uuid>/master.sock``. ``lbaas serve`` given a longer state directory
used to start and then put every amphora in ERROR with HAProxy's message about one path;
it refuses to start its agent instead (exit 2, before any amphora), naming the limit, the path and the longest directory that
fits. The limit itself is HAProxy's: its configuration check accepts a 97-byte socket
path and refuses a 98-byte one, and an amphora with a UUID id runs under a state
directory of exactly the length the refusal names.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.amphora.socket_room import HAPROXY_SOCKET_PATH_MAX, SAMPLE_ID, check_socket_room
from lbaas.errors import CommandRefused
from lbaas.host.loopback import LoopbackHostOps
from lbaas.wire.amphora import AmphoraSpec, VipSpec
from tests.e2e.agent.agent_e2e_support import Backend, Server, haproxy_config, random_loopback
from tests.e2e.amphora.serve_process import free_port, serve_settings
from tests.support.processes import lbaas_env

pytestmark = pytest.mark.haproxy


@pytest.fixture
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lbl-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _state_dir(scratch: Path, length: int) -> Path:
    """A directory under ``scratch`` whose absolute path is ``length`` bytes long."""
    pad = length - len(str(scratch)) - 1
    path = scratch / ("d" * pad)
    path.mkdir()
    assert len(str(path)) == length
    return path


def _haproxy_check(scratch: Path, socket_path: str) -> subprocess.CompletedProcess[str]:
    config = scratch / "check.cfg"
    config.write_text(f"global\n    stats socket {socket_path} mode 600 level admin\n")
    return subprocess.run(
        ["haproxy", "-c", "-f", str(config)], capture_output=True, text=True, check=False
    )


def test_the_limit_is_haproxys(scratch: Path) -> None:
    fits = "/tmp/" + "s" * (HAPROXY_SOCKET_PATH_MAX - len("/tmp/"))
    assert _haproxy_check(scratch, fits).returncode == 0
    refused = _haproxy_check(scratch, fits + "s")
    assert refused.returncode != 0
    assert f"too long (max {HAPROXY_SOCKET_PATH_MAX})" in refused.stdout + refused.stderr


def test_a_uuid_amphora_runs_under_the_longest_state_directory_that_fits(scratch: Path) -> None:
    # <state>/amphorae/<36>/master.sock must be at most 97 bytes: 39 for the state directory.
    longest = HAPROXY_SOCKET_PATH_MAX - len(f"/amphorae/{SAMPLE_ID}/master.sock")
    state = _state_dir(scratch, longest)
    check_socket_room(state, state / "amphorae", state / "amphorae-logs")
    with pytest.raises(CommandRefused) as refused:
        longer = _state_dir(scratch, longest + 1)
        check_socket_room(longer, longer / "amphorae", longer / "amphorae-logs")
    assert f"at most {longest} bytes" in str(refused.value)
    manager = AmphoraRegistry(state / "amphorae", LoopbackHostOps())
    backend = Backend("only")
    amphora_id = "0a1b2c3d-0000-4000-8000-00000000abcd"
    try:
        vip = random_loopback()
        config = haproxy_config(
            manager.root / amphora_id,
            vip,
            free_port(vip),
            [Server("m0", backend.address, backend.port)],
        )
        spec = AmphoraSpec(
            version=1,
            loadbalancer_id="lb-long",
            **config,
            vip=VipSpec(address=vip, subnet_cidr=f"{vip}/8", network_id="lo"),
        )
        status = manager.put(amphora_id, spec)
        assert status.last_outcome == "STARTED" and status.master_pid is not None
        assert len(str(manager.root / amphora_id / "master.sock")) == HAPROXY_SOCKET_PATH_MAX
    finally:
        for each in manager.amphora_ids():
            manager.delete(each)
        backend.close()


def test_serve_refuses_a_state_directory_haproxy_cannot_fit(scratch: Path) -> None:
    state = _state_dir(scratch, 120)
    settings = serve_settings(state)
    process = subprocess.Popen(
        [sys.executable, "-m", "lbaas.cli", "serve"],
        env=lbaas_env(settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("lbaas serve started with a state directory HAProxy's sockets cannot fit")
    master = f"{state}/amphorae/{SAMPLE_ID}/master.sock"
    assert process.returncode == 2, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"lbaas: state directory {state} is too long for HAProxy: the UNIX socket path "
        f"{master} is {len(master)} bytes, and HAProxy takes at most 97 (an amphora's "
        "master socket); use a state directory of at most 39 bytes"
    )
    assert not (state / "amphorae").exists()
