"""The README's quick start, run as written: two tiny backends, the CLI, curl through the VIP.

The shell block of README.md that creates the load balancer is read from the file and run
with bash against a running ``lbaas serve`` (what ``./quickstart serve`` ends in; the
installer part is not run here). Only what cannot be shared on a test machine is changed:
the API endpoint and the two backend ports (free ones instead of 9876, 8001 and 8002), the
backend directories (a temporary one instead of /tmp/one and /tmp/two), and activating
``.venv`` (the tests already run in an environment that has the CLI).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import ServeInstance, free_port

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

README = Path(__file__).resolve().parents[3] / "README.md"
SCRIPT_TIMEOUT = 300


def quickstart_block() -> str:
    """The ```sh block of the README that puts a load balancer in front of two backends
    (on loopback VIPs: the multi-host lab's block runs its commands through ``lab exec``)."""
    blocks: list[str] = re.findall(r"```sh\n(.*?)```", README.read_text(), flags=re.S)
    wanted = [
        block
        for block in blocks
        if "openstack loadbalancer create" in block and "lbaas lab" not in block
    ]
    assert len(wanted) == 1, "README.md should have one quick-start block creating an LB"
    return wanted[0]


def adapted(block: str, endpoint: str, workdir: Path, ports: tuple[int, int]) -> str:
    lines = [line for line in block.splitlines() if not line.startswith(". .venv/bin/activate")]
    script = "\n".join(lines)
    assert "http://127.0.0.1:9876" in script and "8001" in script and "8002" in script
    script = script.replace("http://127.0.0.1:9876", endpoint)
    script = re.sub(r"\b8001\b", str(ports[0]), script)
    script = re.sub(r"\b8002\b", str(ports[1]), script)
    script = script.replace("/tmp/one", str(workdir / "one"))
    script = script.replace("/tmp/two", str(workdir / "two"))
    return "set -euo pipefail\n" + script + "\n"


def test_readme_quick_start_serves_traffic(
    serve: ServeInstance, api: OctaviaApi, tmp_path: Path
) -> None:
    script = adapted(quickstart_block(), serve.url, tmp_path, (free_port(), free_port()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # Output goes to files: the backends started in the background keep their copies of
    # the descriptors open, so pipes would never reach end-of-file. The script runs in a
    # process group of its own, and those backends die with that group below.
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    with open(out_path, "w") as out_file, open(err_path, "w") as err_file:
        shell = subprocess.Popen(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out_file,
            stderr=err_file,
            start_new_session=True,
        )
    try:
        shell.wait(SCRIPT_TIMEOUT)
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait(10)
        try:
            os.killpg(shell.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        for lb in api.get("/v2/lbaas/loadbalancers")["loadbalancers"]:
            if lb["name"] == "web":
                api.delete_loadbalancer(lb["id"])
    out, err = out_path.read_text(), err_path.read_text()
    assert shell.returncode == 0, f"the README's commands failed:\n{err[-3000:]}\n{out[-2000:]}"
    lines = [line.strip() for line in out.splitlines()]
    # The two curls answer "one" and "two" (in either order: round robin through HAProxy).
    assert sorted(line for line in lines if line in ("one", "two")) == ["one", "two"], out
    assert "total_connections" in out, out
    assert '"provisioning_status": "ACTIVE"' in out, out
