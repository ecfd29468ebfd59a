"""The README's walk-through, run as written: two tiny backends, the CLI, curl through the VIP,
then TLS with certificates stored by the stock ``openstack secret`` commands; and its
"Stop and clean up" block against a serve of its own.

The shell blocks of README.md that create the load balancer and its TERMINATED_HTTPS
listener are read from the file and run, one after the other, in one bash against a running
``lbaas serve`` (what ``./quickstart serve`` ends in; the installer part is not run here).
Only what cannot be shared on a test machine is changed: the API endpoint and the two
backend ports (free ones instead of 9876, 8001 and 8002), the backend directories (a
temporary one instead of /tmp/one and /tmp/two), and activating ``.venv`` (the tests
already run in an environment that has the CLI). The secret commands are run with only the
``OS_ENDPOINT`` the first block exports, as the README shows them.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.amphora.conftest import SHARED_SETTINGS
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import (
    STOP_TIMEOUT,
    ServeInstance,
    free_port,
    haproxy_pids_under,
    running_serve,
)
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID, free_port_on
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.haproxy]

README = Path(__file__).resolve().parents[3] / "README.md"
SCRIPT_TIMEOUT = 300


def sh_blocks() -> list[str]:
    blocks: list[str] = re.findall(r"```sh\n(.*?)```", README.read_text(), flags=re.S)
    return blocks


def the_block(containing: str) -> str:
    """The one ```sh block of the README that runs ``containing``."""
    wanted = [block for block in sh_blocks() if containing in block]
    assert len(wanted) == 1, f"README.md should have one sh block running {containing!r}"
    return wanted[0]


def quickstart_blocks() -> str:
    """The block that puts a load balancer in front of two backends, then the TLS block."""
    tls = the_block("openstack secret store")
    assert "--os-endpoint" not in tls, "the README's secret commands need only OS_ENDPOINT"
    return the_block("openstack loadbalancer create") + tls


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


def negotiated_http_version(api: OctaviaApi) -> str:
    """The HTTP version curl gets from the README's TERMINATED_HTTPS listener (ALPN)."""
    (lb,) = [
        lb for lb in api.get("/v2/lbaas/loadbalancers")["loadbalancers"] if lb["name"] == "web"
    ]
    url = f"https://{lb['vip_address']}:8443/"
    done = subprocess.run(
        ["curl", "-sk", "--http2", "-o", "/dev/null", "-w", "%{http_version}", url],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.stdout.strip()


def test_readme_quick_start_serves_traffic(
    serve: ServeInstance, api: OctaviaApi, tmp_path: Path
) -> None:
    script = adapted(quickstart_blocks(), serve.url, tmp_path, (free_port(), free_port()))
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
    http_version = ""
    try:
        shell.wait(SCRIPT_TIMEOUT)
        if shell.returncode == 0:
            http_version = negotiated_http_version(api)
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
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    # The two curls answer "one" and "two" (in either order: round robin through HAProxy),
    # and the HTTPS curl at the end one of them.
    answers = [line for line in lines if line in ("one", "two")]
    assert sorted(answers[:2]) == ["one", "two"], out
    assert len(answers) == 3 and lines[-1] == answers[2], out
    assert "total_connections" in out, out
    assert '"provisioning_status": "ACTIVE"' in out, out
    assert http_version == "2", f"the TLS listener answered over HTTP/{http_version}"


def stop_steps() -> tuple[str, str]:
    """The README's "Stop and clean up" block: its step while serve runs (the delete), and
    the steps after Ctrl-C (cleanup, then removing the state directory)."""
    block = the_block("lbaas cleanup")
    lines = [line for line in block.splitlines() if line.strip()]
    running = [line for line in lines if line.startswith("openstack ")]
    after = [line for line in lines if not line.startswith("openstack ")]
    assert running and any(line.startswith("lbaas cleanup") for line in after), block
    return "\n".join(running), "\n".join(after)


def _accepts(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=2):
            return True
    except OSError:
        return False


def _run_steps(script: str, serve: ServeInstance) -> None:
    script = script.replace("./state", str(serve.state_dir))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "LBAAS_"))}
    env.update(OS_AUTH_TYPE="none", OS_ENDPOINT=serve.url)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + script],
        env=env,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"{script}\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}"


def test_readme_stop_and_clean_up() -> None:
    """The README's stop block, as written: the deleted load balancer's HAProxy stops at
    once; Ctrl-C leaves the other one serving (by design); ``lbaas cleanup`` stops it and
    ``rm -rf`` leaves nothing of the state directory."""
    while_running, after_stop = stop_steps()
    with running_serve(SHARED_SETTINGS, prefix="lbr-") as serve:
        served: dict[str, tuple[str, int]] = {}
        with serve.api() as api:
            for name in ("web", "left"):
                lb = api.create_loadbalancer(LOOPBACK_SUBNET_ID, name=name)
                port = free_port_on(lb["vip_address"])
                api.create_listener(lb["id"], "HTTP", port)
                served[name] = (lb["vip_address"], port)
        for vip, port in served.values():
            wait_until(lambda v=vip, p=port: _accepts(v, p), 60, "HAProxy on the VIP")

        _run_steps(while_running, serve)
        assert not _accepts(*served["web"])
        os.killpg(serve.process.pid, signal.SIGINT)  # Ctrl-C
        serve.process.wait(STOP_TIMEOUT)
        assert _accepts(*served["left"])  # serving on without lbaas serve
        assert haproxy_pids_under(serve.state_dir)

        _run_steps(after_stop, serve)
        assert not serve.state_dir.exists()
        assert not _accepts(*served["left"])
