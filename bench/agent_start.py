"""How fast a killed agent serves again: its import time and exec-to-ready time.

    python bench/agent_start.py [--quick] [--runs N]

A restarted ``lbaas agent`` holds its load balancers PENDING until it answers (issue 10,
point 13: longest PENDING <= 10 s), so its start-up is measured on its own:

- ``import_seconds``: wall time of ``python -c 'import lbaas.cli, lbaas.fleet.agent_service'``
  (``python_seconds``: the bare interpreter, for comparison), and ``import_cpu_seconds``
  its CPU time (user + system), which a loaded machine disturbs less;
- ``ready_seconds``: from exec of ``lbaas agent`` (loopback mode, a fresh state directory
  whose PKI the first, unmeasured start creates) until its HTTPS port accepts a
  connection; the agent is then SIGKILLed, as in ``bench/chaos.py``;
- ``serving_seconds``: the same, until it answers ``GET /v1/info`` over mutual TLS, as
  a worker's converge would (the port accepts a little earlier: it is bound before the
  HTTPS server runs);
- ``heavy_modules``: which of the modules the agent does not need to serve were imported
  anyway (numpy only builds large Maglev tables, httpx only talks to a metadata service,
  the HAProxy renderer is the controller's: the agent only checks what it is sent).

Each figure is the median of ``--runs`` runs. Prints JSON; nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dataplane_procs import accepts, free_port

from lbaas.certs.authority import CertificateAuthority
from lbaas.errors import AgentUnreachable
from lbaas.fleet.client import AgentClient

AGENT_IMPORTS = "import lbaas.cli, lbaas.fleet.agent_service"
# Packages, or modules by their full name: the HAProxy renderer is the controller's.
HEAVY = (
    "numpy",
    "httpx",
    "rich",
    "kubernetes",
    "sqlalchemy",
    "alembic",
    "psycopg",
    "lbaas.render.haproxy.emit",
    "lbaas.metadata.agent",
)
READY_TIMEOUT = 120.0


def _wall(code: str) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.monotonic() - started


def _cpu(code: str) -> float:
    """CPU seconds (user + system) of ``python -c code``: steadier than wall time on a
    loaded machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heavy_modules() -> list[str]:
    """The modules of ``HEAVY`` that importing the agent loads."""
    probe = f"{AGENT_IMPORTS}; import sys, json; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    modules = json.loads(done.stdout)
    loaded = set(modules) | {name.split(".")[0] for name in modules}
    return [name for name in HEAVY if name in loaded]


def controller_client(state_dir: Path, port: int) -> AgentClient:
    """A client with the controller's certificate from the run's CA (as a worker's)."""
    pki = state_dir / "pki"
    tls = CertificateAuthority.load_or_create(pki).ensure_identity(
        pki / "controller", "controller", "client"
    )
    return AgentClient(f"https://127.0.0.1:{port}", tls=tls, timeout=5.0)


def answers(client: AgentClient) -> bool:
    try:
        client.info()
    except AgentUnreachable:
        return False
    return True


def ready_once(
    env: dict[str, str], port: int, log: Path, client: AgentClient | None = None
) -> tuple[float, float]:
    """Seconds from exec of ``lbaas agent`` until its port accepts, and until it answers
    ``client`` (0.0 without one); then SIGKILL it."""
    started = time.monotonic()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lbaas.cli", "agent"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        while not accepts("127.0.0.1", port):
            if proc.poll() is not None:
                raise SystemExit(f"agent exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            if time.monotonic() - started > READY_TIMEOUT:
                raise SystemExit(f"agent not ready in {READY_TIMEOUT} s")
            time.sleep(0.02)
        accepted = time.monotonic() - started
        while client is not None and not answers(client):
            if proc.poll() is not None or time.monotonic() - started > READY_TIMEOUT:
                raise SystemExit(f"agent never answered:\n{log.read_text()[-3000:]}")
            time.sleep(0.02)
        return accepted, (time.monotonic() - started if client is not None else 0.0)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 run (the smoke test)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    with tempfile.TemporaryDirectory(prefix="lbaas-agent-start-") as workdir:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LBAAS_")}
        env |= {
            "LBAAS_STATE_DIR": str(Path(workdir) / "state"),
            "LBAAS_AGENT__HOST": "127.0.0.1",
            "LBAAS_AGENT__PORT": str(port),
            # Heartbeats to a port nobody reads, never to a health manager of another run.
            "LBAAS_HEALTH__BIND_PORT": str(free_port(kind=socket.SOCK_DGRAM)),
        }
        log = Path(workdir) / "agent.log"
        first, _ = ready_once(env, port, log)
        client = controller_client(Path(workdir) / "state", port)
        runs_done = [ready_once(env, port, log, client) for _ in range(runs)]
        client.close()
        ready = [accepted for accepted, _ in runs_done]
        serving = [answered for _, answered in runs_done]
    figures = {
        "runs": runs,
        "python_seconds": round(statistics.median(_wall("pass") for _ in range(runs)), 3),
        "import_seconds": round(statistics.median(_wall(AGENT_IMPORTS) for _ in range(runs)), 3),
        "import_cpu_seconds": round(statistics.median(_cpu(AGENT_IMPORTS) for _ in range(runs)), 3),
        "first_start_seconds": round(first, 3),
        "ready_seconds": round(statistics.median(ready), 3),
        "ready_seconds_max": round(max(ready), 3),
        "serving_seconds": round(statistics.median(serving), 3),
        "serving_seconds_max": round(max(serving), 3),
        "heavy_modules": heavy_modules(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
