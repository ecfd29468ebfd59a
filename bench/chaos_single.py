"""``bench/chaos.py --case single-crash``: PENDING after one crash of each kind, and how
long a (re)started ``lbaas serve`` takes to answer.

Issue 31 point 4: after any single crash, PENDING <= 10 s (p95) on a quiet 2-core machine,
and ``lbaas serve`` answers within 5 s of being started. Two deployments, each with one
load balancer (an HTTP listener, a pool, one member on a local backend):

* ``split``: ``lbaas api``, ``lbaas worker``, ``lbaas health``, ``lbaas agent`` (the
  agent's socket held as systemd's socket activation holds it), each restarted
  ``--restart-delay`` s after it dies, as ``Restart=always`` would; kinds ``api``,
  ``worker``, ``health``.
* ``serve``: one ``lbaas serve``; kinds ``serve-worker`` (its worker child, restarted by
  serve's own supervisor) and ``serve`` (serve itself, restarted by the bench after
  ``--restart-delay``).

A trial: the load balancer is renamed (PENDING_UPDATE), 50 ms later one process of the
kind is SIGKILLed (so that a worker is killed mid-converge, holding the job), and the
time from the accepted rename until the API shows ACTIVE again is the trial's PENDING.
The next trial waits until everything serves again: each crash is a single one. Each
start of ``lbaas serve`` records the seconds until ``GET /`` answers and the CPU seconds
serve had used by then (what it would take on an idle machine, give or take the child's
competition for the other core).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from chaos import (
    LB,
    Backend,
    Fleet,
    api_answers,
    environment,
    haproxy_pids,
    uptime,
    wait_for_api,
)
from dataplane_procs import children_of, free_port

from lbaas.jobs.wakeup import wakeup_directory

SPLIT_KINDS = ("api", "worker", "health")
SERVE_KINDS = ("serve-worker", "serve")
SUBNET = "7f000a00-0000-4000-8000-000000000001"
TICKS = os.sysconf("SC_CLK_TCK")


def own_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (not its children's)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def create_load_balancer(url: str, backend: Backend) -> str:
    member = {"address": backend.address, "protocol_port": backend.port}
    pool: dict[str, Any] = {"name": "pool", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}
    pool["members"] = [member]
    listener = {"protocol": "HTTP", "protocol_port": free_port(), "default_pool": pool}
    body = {"name": "single", "vip_subnet_id": SUBNET, "listeners": [listener]}
    r = httpx.post(url + LB, json={"loadbalancer": body}, timeout=30)
    if r.status_code != 201:
        raise SystemExit(f"create refused: {r.status_code} {r.text[:500]}")
    lb_id = str(r.json()["loadbalancer"]["id"])
    if wait_status(url, lb_id, 120) is None:
        raise SystemExit("the load balancer did not become ACTIVE")
    return lb_id


def wait_status(url: str, lb_id: str, limit: float) -> float | None:
    """Seconds until the load balancer reads ACTIVE (through API outages), or None."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        try:
            r = httpx.get(f"{url}{LB}/{lb_id}", timeout=2)
            if r.status_code == 200 and r.json()["loadbalancer"]["provisioning_status"] == "ACTIVE":
                return time.monotonic() - start
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return None


def rename(url: str, lb_id: str, n: int) -> float:
    """Rename the load balancer (it goes PENDING_UPDATE); when the API accepted it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            r = httpx.put(
                f"{url}{LB}/{lb_id}", json={"loadbalancer": {"name": f"single-{n}"}}, timeout=5
            )
            if r.is_success:
                return time.monotonic()
        except httpx.HTTPError:
            pass
        time.sleep(0.2)  # 409 while still PENDING from the last trial, or the API away
    raise SystemExit("the rename was never accepted")


class ServeProcess:
    """One ``lbaas serve``, restarted by the bench when killed; each start's time to
    answer and CPU by then."""

    def __init__(self, workdir: Path, env: dict[str, str], url: str) -> None:
        self.workdir, self.env, self.url = workdir, env, url
        self.process: subprocess.Popen[bytes] | None = None
        self.starts: list[dict[str, float]] = []

    def start(self) -> None:
        log = open(self.workdir / "serve.log", "ab")  # noqa: SIM115 - owned by the child
        started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lbaas.cli", "serve"],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        while not api_answers(self.url):
            if self.process.poll() is not None or time.monotonic() - started > 120:
                raise SystemExit(
                    f"serve did not answer: {(self.workdir / 'serve.log').read_text()[-2000:]}"
                )
            time.sleep(0.02)
        answered = time.monotonic() - started
        self.starts.append({"answer_s": answered, "cpu_s": own_cpu_seconds(self.process.pid)})

    def worker_child(self) -> int | None:
        assert self.process is not None
        pid = self.process.pid
        for child in children_of(pid):
            if b"worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
        return None

    def worker_serving(self) -> bool:
        child = self.worker_child()
        if child is None:
            return False
        return any(wakeup_directory(Path(self.env["LBAAS_STATE_DIR"])).glob(f"{child}-*"))

    def kill(self, kind: str, restart_delay: float) -> None:
        assert self.process is not None
        if kind == "serve-worker":
            child = self.worker_child()
            if child is not None:
                os.kill(child, signal.SIGKILL)
            return
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        # Its worker child notices and stops; a service manager restarts serve.
        threading.Timer(restart_delay, self.start).start()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def split_trials(workdir: Path, args: Any, trials: int) -> dict[str, list[float]]:
    workdir.mkdir(parents=True)
    api_port = free_port()
    url = f"http://127.0.0.1:{api_port}"
    env = environment(workdir, args, api_port)
    upgrade = [sys.executable, "-m", "lbaas.cli", "db", "upgrade"]
    subprocess.run(upgrade, env=env, check=True, capture_output=True)
    backend = Backend(env["CHAOS_BACKEND_ADDRESS"])
    fleet = Fleet(workdir, env, args.restart_delay, "inherited")
    stop = threading.Event()

    def supervise() -> None:
        while not stop.wait(0.1):
            fleet.restart_due()
            fleet.note_ready()

    watcher = threading.Thread(target=supervise, daemon=True)
    fleet.start_all()
    watcher.start()
    pending: dict[str, list[float]] = {kind: [] for kind in SPLIT_KINDS}
    try:
        if not wait_for_api(url, 120):
            raise SystemExit("the API did not start")
        lb_id = create_load_balancer(url, backend)
        n = 0
        for _ in range(trials):
            for kind in SPLIT_KINDS:
                n += 1
                wait_serving(lambda: all(fleet.serving(r) for r in fleet.procs), kind)
                accepted = rename(url, lb_id, n)
                time.sleep(0.05)
                fleet.kill(kind)
                took = wait_status(url, lb_id, 120)
                pending[kind].append(float("inf") if took is None else time.monotonic() - accepted)
    finally:
        stop.set()
        watcher.join(5)
        fleet.stop()
        backend.stop()
        kill_haproxies(env["LBAAS_STATE_DIR"])
    return pending


def serve_trials(
    workdir: Path, args: Any, trials: int
) -> tuple[dict[str, list[float]], list[dict[str, float]]]:
    workdir.mkdir(parents=True)
    api_port = free_port()
    url = f"http://127.0.0.1:{api_port}"
    env = environment(workdir, args, api_port)
    backend = Backend(env["CHAOS_BACKEND_ADDRESS"])
    serve = ServeProcess(workdir, env, url)
    pending: dict[str, list[float]] = {kind: [] for kind in SERVE_KINDS}
    try:
        serve.start()
        lb_id = create_load_balancer(url, backend)
        n = 0
        for _ in range(trials):
            for kind in SERVE_KINDS:
                n += 1
                wait_serving(lambda: api_answers(url) and serve.worker_serving(), kind)
                accepted = rename(url, lb_id, n)
                time.sleep(0.05)
                serve.kill(kind, args.restart_delay)
                took = wait_status(url, lb_id, 120)
                pending[kind].append(float("inf") if took is None else time.monotonic() - accepted)
    finally:
        serve.stop()
        backend.stop()
        kill_haproxies(env["LBAAS_STATE_DIR"])
    return pending, serve.starts


def kill_haproxies(state_dir: str) -> None:
    """The HAProxies a stopped agent leaves serving (as it should): the bench's end."""
    for pid in haproxy_pids(state_dir):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_serving(condition: Any, what: str, limit: float = 120.0) -> None:
    """Until ``condition()``, then a second more: the next crash is a single one."""
    print(f"{time.strftime('%H:%M:%S')} next: {what}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if condition():
                time.sleep(1.0)
                return
        except OSError:  # a process gone between two reads of /proc
            pass
        time.sleep(0.1)
    raise SystemExit(f"the fleet did not serve again before {what}")


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def single_crash(args: Any, workdir: Path) -> dict[str, Any]:
    trials = 1 if args.quick else args.trials
    load_before = uptime()
    # Short names: HAProxy's socket paths under the state directory are capped.
    split = split_trials(workdir / "a", args, trials) if "split" in args.deployments else {}
    served: dict[str, list[float]] = {}
    starts: list[dict[str, float]] = []
    if "serve" in args.deployments:
        served, starts = serve_trials(workdir / "b", args, trials)
    by_kind = split | served
    every = [s for samples in by_kind.values() for s in samples]
    figures: dict[str, Any] = {
        "case": "single-crash",
        "quick": args.quick,
        "trials_per_kind": trials,
        "restart_delay_s": args.restart_delay,
        "pending_s": {
            kind: {
                "samples": [round(s, 2) for s in samples],
                "median": round(statistics.median(samples), 2),
                "max": round(max(samples), 2),
            }
            for kind, samples in by_kind.items()
        },
        "pending_p95_s": round(p95(every), 2) if every else None,
        "serve_start": {
            "answer_s": [round(s["answer_s"], 2) for s in starts],
            "cpu_at_answer_s": [round(s["cpu_s"], 2) for s in starts],
        },
        "load_before": load_before,
        "load": uptime(),
        "cpus": os.cpu_count(),
    }
    figures["targets"] = {
        "pending_p95_within_10s": bool(every) and p95(every) <= 10.0,
        "serve_answers_within_5s": bool(starts) and max(s["answer_s"] for s in starts) <= 5.0,
    }
    return figures
