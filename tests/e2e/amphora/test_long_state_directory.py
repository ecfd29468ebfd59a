"""Any state directory works, however long (issue 31, point 3).

HAProxy takes UNIX socket paths of at most 97 bytes; an amphora's master socket is
``<state>/amphorae/<uuid>/master.sock``, so a state directory of 40 bytes or more used to
put every amphora in ERROR. The agent now runs its amphorae through a short private link
to ``<state>/amphorae`` (``lbaas.amphora.short_root``): the limit is HAProxy's own (its
configuration check), and ``lbaas serve`` with a 120-byte state directory balances
traffic, its files inside that directory, its HAProxy naming the link.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbaas.amphora.short_root import LOGS_SUFFIX, link_for
from lbaas.amphora.socket_room import HAPROXY_SOCKET_PATH_MAX
from tests.e2e.amphora.conftest import BackendFleet
from tests.e2e.amphora.serve_process import running_serve
from tests.e2e.amphora.topology import http_service, loadbalancer
from tests.e2e.amphora.traffic import spread, wait_serving

pytestmark = pytest.mark.haproxy


@pytest.fixture
def scratch() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lbl-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


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


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


@pytest.mark.slow
def test_serve_balances_with_a_120_byte_state_directory(backends: BackendFleet) -> None:
    one, two = backends.http("one", "two")
    with running_serve(state_dir_length=120) as serve:
        link = link_for(serve.state_dir / "amphorae", os.geteuid(), os.environ)
        try:
            with serve.api() as api, loadbalancer(api, "long") as lb:
                service = http_service(lb, [one, two])
                wait_serving(service.vip, service.port)
                assert set(spread(service.vip, service.port, 8)) == {"one", "two"}
                (amphora,) = api.amphorae(lb.id)
                # The files are in the state directory; HAProxy names them by the link.
                real = serve.state_dir / "amphorae" / amphora["id"]
                assert (real / "master.sock").is_socket() and (real / "stats.sock").is_socket()
                pid = int((real / "haproxy.pid").read_text().split()[0])
                assert f"{link}/{amphora['id']}/haproxy.cfg" in _cmdline(pid)
                assert link.resolve() == (serve.state_dir / "amphorae").resolve()
                assert (link.parent.stat().st_mode & 0o777) == 0o700
        finally:
            for each in (link, link.with_name(link.name + LOGS_SUFFIX)):
                each.unlink(missing_ok=True)
