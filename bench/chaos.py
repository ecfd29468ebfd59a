"""The fault campaign: random SIGKILLs of every process kind under load, then invariants.

Runs the split processes against one state directory on this host (``lbaas db upgrade``,
then ``lbaas api``, two ``lbaas worker``, ``lbaas health``, ``lbaas agent``; HAProxy under
the agent), on SQLite by default or on PostgreSQL (``--database-url``). For ``--duration``
seconds a client creates, updates and deletes load balancers (each a listener, a pool and
one member on a local backend) while a killer SIGKILLs a random process of a random kind
(API, worker, health manager, agent, HAProxy; ``--kinds``) every ``--kill-interval``
seconds, on average. Only a process that serves is killed (the API answers, the agent
accepts, a worker has bound its wake-up socket, a health manager has run 3 s): on a
loaded machine a restart can take longer than the interval, and killing half-started
processes would measure a fleet that never came up, not recovery. Killed control-plane
processes are started again after ``--restart-delay`` seconds, as a service manager
would; HAProxy is restarted by its agent. By default (``--agent-socket inherited``) the
campaign also plays systemd's socket activation for the agent, as the documented units
run it: it holds the agent's listening socket and passes it to every agent it starts, so
converges sent while the agent is down wait in the backlog (``own``: each agent binds its
own port, and converges sent meanwhile are refused). Then the killing stops and, after the settle time, the
invariants are checked:

* every acknowledged create exists unless a delete of it was sent (a delete whose answer
  was lost to an API kill may have been done or not); every acknowledged delete is gone;
* nothing is PENDING_* (nor ERROR);
* every ACTIVE listener answers on its VIP with its backend's reply;
* no orphan: no HAProxy and no amphora directory without a live amphora;
* no 5xx outside an API outage (from a kill of the API until it answers again).

It prints one JSON object: kills per kind, requests, violations (each with its detail),
the longest PENDING episode of any load balancer (the five longest with the kills around
them), and the machine's load.

    python bench/chaos.py [--quick] [--duration 180] [--database-url postgresql+psycopg://...]
    python bench/chaos.py --case single-crash [--trials 5] [--deployments split,serve]
    python bench/chaos.py --case forged-flood | stalled-agent

The other cases are described in ``bench/chaos_single.py`` (PENDING after one crash of each
kind, serve's time to answer) and ``bench/chaos_health.py`` (the health manager under a
forged heartbeat flood; a stalled agent whose only backend dies).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from dataplane_procs import AddressPlan, free_port, processes_mentioning

from lbaas.host.socket_activation import spawn_activated
from lbaas.jobs.agent_return import agent_answers
from lbaas.jobs.wakeup import wakeup_directory

LB = "/v2/lbaas/loadbalancers"
KINDS = ("api", "worker", "health", "agent", "haproxy")
CASES = ("campaign", "single-crash", "forged-flood", "stalled-agent")
PENDING = ("PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE")
# The health manager says nothing when it is ready: it counts as serving after this long.
HEALTH_READY_AFTER = 3.0


class Backend:
    """An HTTP server on the backend address that answers its own name."""

    def __init__(self, address: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server interface
                body = b"chaos-backend"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((address, 0), Handler)
        self.address = address
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Fleet:
    """The lbaas processes of the run, restarted after each kill."""

    def __init__(
        self, workdir: Path, env: dict[str, str], restart_delay: float, agent_socket: str
    ) -> None:
        self.workdir = workdir
        self.env = env
        self.restart_delay = restart_delay
        self.roles = {"api": ["api"], "worker-0": ["worker"], "worker-1": ["worker"]}
        self.roles |= {"health": ["health"], "agent": ["agent"]}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.restart_at: dict[str, float] = {}
        self.started_at: dict[str, float] = {}
        self.crashes: list[str] = []
        self.lock = threading.Lock()
        agent = ("127.0.0.1", int(env["LBAAS_AGENT__PORT"]))
        # The agent's listening socket when the campaign holds it, as systemd would.
        self.agent_socket: socket.socket | None = None
        if agent_socket == "inherited":
            self.agent_socket = socket.create_server(agent, backlog=socket.SOMAXCONN)
        # Seconds from a restart until the process serves (API: HTTP; agent: TLS, since
        # with a held socket the port accepts connections while no agent runs).
        self.ready_checks = {
            "api": lambda: api_answers(f"http://127.0.0.1:{env['LBAAS_API__PORT']}"),
            "agent": lambda: agent_answers(agent),
            "worker-0": lambda: self.worker_bound("worker-0"),
            "worker-1": lambda: self.worker_bound("worker-1"),
        }
        self.starting: dict[str, float] = {}
        self.restart_times: dict[str, list[float]] = {kind: [] for kind in self.ready_checks}
        # From a kill until the process serves again (several kills in a row: one outage).
        self.down_since: dict[str, float] = {}
        self.outages: dict[str, list[float]] = {kind: [] for kind in self.ready_checks}
        # Every kill (when, what): the longest PENDING streaks are explained by the kills
        # that fell inside them.
        self.kill_log: list[tuple[float, str]] = []

    def start(self, role: str) -> None:
        self.started_at[role] = time.monotonic()
        log = open(self.workdir / f"{role}.log", "ab")  # noqa: SIM115 - owned by the child
        argv = [sys.executable, "-m", "lbaas.cli", *self.roles[role]]
        if role == "agent" and self.agent_socket is not None:
            self.procs[role] = spawn_activated(self.agent_socket, argv, self.env, output=log)
        else:
            self.procs[role] = subprocess.Popen(
                argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        log.close()

    def start_all(self) -> None:
        for role in self.roles:
            self.start(role)

    def kill(self, kind: str) -> str | None:
        """SIGKILL one process of ``kind``; what was killed, or None if none was running."""
        with self.lock:
            if kind == "haproxy":
                masters = haproxy_pids(self.env["LBAAS_STATE_DIR"])
                if not masters:
                    return None
                pid = random.choice(sorted(masters))
                os.kill(pid, signal.SIGKILL)
                self.kill_log.append((time.monotonic(), "haproxy"))
                return f"haproxy:{pid}"
            roles = [r for r in self.roles if r.split("-")[0] == kind]
            alive = [r for r in roles if self.serving(r)]
            if not alive:
                return None
            role = random.choice(alive)
            os.kill(self.procs[role].pid, signal.SIGKILL)
            self.kill_log.append((time.monotonic(), role))
            self.procs[role].wait()
            self.down_since.setdefault(role, time.monotonic())
            self.restart_at[role] = time.monotonic() + self.restart_delay
            return role

    def serving(self, role: str) -> bool:
        """Whether ``role`` is up and serving: only those are killed, so that a machine
        slow to start processes measures recovery, not a fleet that never came up."""
        proc = self.procs[role]
        if proc.poll() is not None or role in self.starting:
            return False
        if role.startswith("worker"):
            return self.worker_bound(role)
        return time.monotonic() - self.started_at[role] >= HEALTH_READY_AFTER

    def worker_bound(self, role: str) -> bool:
        """A worker's wake-up socket is bound once its claim loops run."""
        pid = self.procs[role].pid
        return any(wakeup_directory(Path(self.env["LBAAS_STATE_DIR"])).glob(f"{pid}-*"))

    def restart_due(self) -> None:
        with self.lock:
            now = time.monotonic()
            for role, proc in self.procs.items():
                # Exited without being killed: a crash of its own. Restart it, and say so.
                if proc.poll() is not None and role not in self.restart_at:
                    self.crashes.append(f"{role} exited {proc.returncode} by itself")
                    self.restart_at[role] = now + self.restart_delay
            for role, when in list(self.restart_at.items()):
                if now >= when:
                    del self.restart_at[role]
                    self.start(role)
                    if role in self.ready_checks:
                        self.starting[role] = now

    def note_ready(self) -> None:
        for role, started in list(self.starting.items()):
            if self.procs[role].poll() is not None:
                del self.starting[role]  # killed again before it was ready
            elif self.ready_checks[role]():
                now = time.monotonic()
                self.restart_times[role].append(now - started)
                self.outages[role].append(now - self.down_since.pop(role, started))
                self.kill_log.append((now, f"{role}-ready"))
                del self.starting[role]

    def stop(self) -> list[str]:
        """SIGTERM everything; the roles that did not exit with status 0."""
        unclean = []
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for role, proc in self.procs.items():
            try:
                code = proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            if code != 0:
                unclean.append(f"{role} exited {code}")
        if self.agent_socket is not None:
            self.agent_socket.close()
        return unclean


def haproxy_pids(state_dir: str) -> dict[int, str]:
    """HAProxy processes of this run (master and workers): pid → amphora directory name."""
    found = {}
    for pid in processes_mentioning(str(Path(state_dir) / "amphorae")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if "-f" in argv and "haproxy" in Path(argv[0]).name:
            config = Path(argv[argv.index("-f") + 1])
            found[pid] = config.parent.name
    return found


class Ledger:
    """What the API acknowledged, its 5xx, and when the API was out."""

    def __init__(self) -> None:
        self.created: dict[str, dict[str, Any]] = {}
        self.deleted: set[str] = set()
        # Deletes whose answer was lost (the API killed between its commit and its reply):
        # the load balancer may be gone or not, either is right.
        self.delete_sent: set[str] = set()
        self.server_errors: list[tuple[float, str]] = []
        self.outages: list[list[float]] = []
        self.requests = Counter[str]()
        # One example body per (method, status) the API refused, other than 409 (busy).
        self.refusals: dict[str, str] = {}
        self.lock = threading.Lock()

    def api_killed(self) -> None:
        with self.lock:
            self.outages.append([time.monotonic(), float("inf")])

    def api_spared(self) -> None:
        """The API kill just recorded found no serving API to kill: no outage."""
        with self.lock:
            self.outages.pop()

    def api_answers(self) -> None:
        with self.lock:
            if self.outages and self.outages[-1][1] == float("inf"):
                self.outages[-1][1] = time.monotonic()

    def in_outage(self, when: float) -> bool:
        # A request sent just before the kill may fail just after the restart.
        return any(start - 2 <= when <= end + 2 for start, end in self.outages)


class Client:
    """The mixed load: create while below the target count, else update or delete."""

    def __init__(
        self, url: str, ledger: Ledger, backend: Backend, target: int, watch: PendingWatch
    ) -> None:
        self.http = httpx.Client(base_url=url, timeout=15)
        self.ledger = ledger
        self.watch = watch
        self.backend = backend
        self.target = target
        self.n = 0

    def request(self, method: str, path: str, body: Any = None) -> httpx.Response | None:
        sent = time.monotonic()
        try:
            response = self.http.request(method, path, json=body)
        except httpx.HTTPError:
            self.ledger.requests["transport_error"] += 1
            return None
        self.ledger.requests[f"{response.status_code // 100}xx"] += 1
        if response.status_code >= 400 and response.status_code != 409:
            with self.ledger.lock:
                self.ledger.refusals[f"{method} {response.status_code}"] = response.text[:300]
        if response.status_code >= 500:
            with self.ledger.lock:
                self.ledger.server_errors.append((sent, f"{method} {path} {response.status_code}"))
        return response

    def step(self) -> None:
        live = [i for i in self.ledger.created if i not in self.ledger.deleted]
        if len(live) < self.target or not live:
            self.create()
        elif random.random() < 0.6:
            self.update(random.choice(live))
        else:
            self.delete(random.choice(live))

    def create(self) -> None:
        self.n += 1
        port = free_port(host="127.0.0.1")
        member = {"address": self.backend.address, "protocol_port": self.backend.port}
        pool = {"name": f"pool{self.n}", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}
        pool["members"] = [member]
        listener = {"protocol": "HTTP", "protocol_port": port, "default_pool": pool}
        body = {"name": f"chaos{self.n}", "listeners": [listener]}
        body["vip_subnet_id"] = "7f000a00-0000-4000-8000-000000000001"
        sent = time.monotonic()
        r = self.request("POST", LB, {"loadbalancer": body})
        if r is not None and r.status_code == 201:
            lb = r.json()["loadbalancer"]
            self.watch.created(lb["id"], sent)
            with self.ledger.lock:
                self.ledger.created[lb["id"]] = {"port": port}

    def update(self, lb_id: str) -> None:
        r = self.request("GET", f"{LB}/{lb_id}")
        if r is None or r.status_code != 200:
            return
        listeners = r.json()["loadbalancer"]["listeners"]
        if not listeners:
            return
        limit = random.choice([-1, 500, 1000, 2000])
        body = {"listener": {"connection_limit": limit}}
        sent = time.monotonic()
        r = self.request("PUT", f"/v2/lbaas/listeners/{listeners[0]['id']}", body)
        if r is not None and r.is_success:  # accepted only while not PENDING (else 409)
            self.watch.accepted(lb_id, sent)

    def delete(self, lb_id: str) -> None:
        sent = time.monotonic()
        r = self.request("DELETE", f"{LB}/{lb_id}?cascade=true")
        if r is None or r.status_code >= 500:  # no answer: done or not, nobody knows
            with self.ledger.lock:
                self.ledger.delete_sent.add(lb_id)
        if r is not None and r.status_code == 204:
            self.watch.accepted(lb_id, sent)
            with self.ledger.lock:
                self.ledger.deleted.add(lb_id)


class PendingWatch:
    """The longest time any load balancer stayed PENDING_* without a break.

    Polls see PENDING at moments; between two polls seeing PENDING the load balancer may
    have gone ACTIVE and been changed again (the load changes a load balancer as soon as
    it is ACTIVE, and on a loaded machine a poll takes a while), which would join two
    episodes into one. The client's accepted update or delete proves the load balancer
    was not PENDING then, so it ends the episode there and starts a new one at the
    request's sending (``accepted``); a create's episode starts when it is sent. An
    episode lasts from its start to the last poll that saw it PENDING (a lower bound of
    its length only by up to one poll period). ``longest_merged`` keeps the measure
    without that split, as earlier campaigns reported it.
    """

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=5)
        self.lock = threading.Lock()
        self.since: dict[str, float] = {}
        self.seen: dict[str, float] = {}
        """id → the last poll that saw the current episode PENDING"""
        self.status_of: dict[str, str] = {}
        self.longest = 0.0
        self.longest_id = ""
        # (start, last seen PENDING, id, status) of every episode that ended.
        self.streaks: list[tuple[float, float, str, str]] = []
        self.merged_since: dict[str, float] = {}
        self.longest_merged = 0.0

    def created(self, lb_id: str, sent: float) -> None:
        with self.lock:
            self.since[lb_id] = self.seen[lb_id] = sent

    def accepted(self, lb_id: str, sent: float) -> None:
        """An update or delete of ``lb_id`` sent at ``sent`` was accepted (2xx)."""
        with self.lock:
            if lb_id in self.since:
                self._ended(lb_id)
            self.since[lb_id] = self.seen[lb_id] = sent

    def poll(self) -> dict[str, str] | None:
        try:
            r = self.http.get(LB)
        except httpx.HTTPError:
            return None
        if r.status_code != 200:
            return None
        statuses = {lb["id"]: lb["provisioning_status"] for lb in r.json()["loadbalancers"]}
        now = time.monotonic()
        with self.lock:
            for lb_id, status in statuses.items():
                if status in PENDING:
                    start = self.since.setdefault(lb_id, now)
                    self.seen[lb_id] = now
                    self.status_of.setdefault(lb_id, status)
                    if now - start > self.longest:
                        self.longest, self.longest_id = now - start, lb_id
                    merged = self.merged_since.setdefault(lb_id, now)
                    self.longest_merged = max(self.longest_merged, now - merged)
                else:
                    self.merged_since.pop(lb_id, None)
                    if lb_id in self.since:
                        self._ended(lb_id)
            for lb_id in set(self.since) - set(statuses):
                self._ended(lb_id)
            for lb_id in set(self.merged_since) - set(statuses):
                del self.merged_since[lb_id]
        return statuses

    def _ended(self, lb_id: str) -> None:
        start, seen = self.since.pop(lb_id), self.seen.pop(lb_id)
        status = self.status_of.pop(lb_id, "")
        if status:  # seen PENDING at least once
            self.streaks.append((start, seen, lb_id, status))

    def longest_streaks(self, kills: list[tuple[float, str]], count: int = 5) -> list[Any]:
        """The ``count`` longest episodes, each with the kills from 15 s before it began
        to its end (seconds relative to its start): what kept it PENDING."""
        with self.lock:
            running = [
                (start, self.seen[i], i, self.status_of[i])
                for i, start in self.since.items()
                if i in self.status_of
            ]
            episodes = self.streaks + running
        found = []
        for start, end, lb_id, status in sorted(episodes, key=lambda s: s[0] - s[1])[:count]:
            window = [(when, what) for when, what in kills if start - 15 <= when <= end]
            during = [f"{what}@{when - start:+.1f}" for when, what in window]
            found.append(
                {"id": lb_id, "status": status, "seconds": round(end - start, 1), "kills": during}
            )
        return found


def api_answers(url: str) -> bool:
    try:
        return httpx.get(url + "/", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def answers_on_vip(address: str, port: int) -> bool:
    try:
        r = httpx.get(f"http://{address}:{port}/", timeout=3)
    except httpx.HTTPError:
        return False
    return r.status_code == 200 and r.text == "chaos-backend"


def check_invariants(url: str, ledger: Ledger, state_dir: Path) -> list[dict[str, Any]]:
    http = httpx.Client(base_url=url, timeout=15)
    violations: list[dict[str, Any]] = []
    for lb_id, info in ledger.created.items():
        r = http.get(f"{LB}/{lb_id}")
        if lb_id in ledger.deleted:
            if r.status_code != 404:
                violations.append({"kind": "delete_not_gone", "id": lb_id, "status": r.status_code})
            continue
        if r.status_code == 404 and lb_id in ledger.delete_sent:
            continue  # a delete was sent, its answer lost: gone is one right outcome
        if r.status_code != 200:
            violations.append({"kind": "create_lost", "id": lb_id, "status": r.status_code})
            continue
        lb = r.json()["loadbalancer"]
        status = lb["provisioning_status"]
        if status != "ACTIVE":
            violations.append({"kind": "not_active_after_settle", "id": lb_id, "status": status})
        elif not answers_on_vip(lb["vip_address"], info["port"]):
            where = f"{lb['vip_address']}:{info['port']}"
            violations.append({"kind": "vip_not_answering", "id": lb_id, "vip": where})
    violations += orphans(http, state_dir)
    for sent, what in ledger.server_errors:
        if not ledger.in_outage(sent):
            violations.append({"kind": "5xx_outside_outage", "request": what})
    return violations


def orphans(http: httpx.Client, state_dir: Path) -> list[dict[str, Any]]:
    r = http.get("/v2/octavia/amphorae")
    if r.status_code != 200:
        return [{"kind": "amphorae_unreadable", "status": r.status_code}]
    live = {a["id"] for a in r.json()["amphorae"] if a["status"] != "DELETED"}
    found: list[dict[str, Any]] = []
    for pid, amphora in haproxy_pids(str(state_dir)).items():
        if amphora not in live:
            found.append({"kind": "orphan_haproxy", "pid": pid, "amphora": amphora})
    root = state_dir / "amphorae"
    for entry in sorted(root.iterdir()) if root.exists() else []:
        if entry.is_dir() and entry.name not in live:
            found.append({"kind": "orphan_amphora_directory", "name": entry.name})
    return found


def settle(watch: PendingWatch, ledger: Ledger, limit: float) -> float:
    """Seconds until nothing acknowledged is PENDING (or ``limit``)."""
    start = time.monotonic()
    while time.monotonic() - start < limit:
        statuses = watch.poll()
        if statuses is not None and not any(s in PENDING for s in statuses.values()):
            return time.monotonic() - start
        time.sleep(0.5)
    return time.monotonic() - start


def wait_for_api(url: str, limit: float) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if api_answers(url):
            return True
        time.sleep(0.1)
    return False


def environment(workdir: Path, args: argparse.Namespace, api_port: int) -> dict[str, str]:
    plan = AddressPlan.random()
    settings = {
        "LBAAS_STATE_DIR": str(workdir / "state"),
        "LBAAS_DATABASE__URL": args.database_url,
        "LBAAS_API__PORT": str(api_port),
        "LBAAS_AGENT__PORT": str(free_port()),
        "LBAAS_HEALTH__BIND_PORT": str(free_port(kind=socket.SOCK_DGRAM)),
        "LBAAS_NETWORK__LOOPBACK_SUBNET_CIDR": plan.vip_subnet_cidr,
        "LBAAS_WORKER__POLL_INTERVAL": "0.2",
        "LBAAS_LOG_LEVEL": args.log_level,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("LBAAS_")}
    env.update(settings)
    env["CHAOS_BACKEND_ADDRESS"] = plan.backend_address
    return env


def campaign(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    api_port = free_port()
    url = f"http://127.0.0.1:{api_port}"
    env = environment(workdir, args, api_port)
    subprocess.run(
        [sys.executable, "-m", "lbaas.cli", "db", "upgrade"],
        env=env,
        check=True,
        capture_output=True,
    )
    backend = Backend(env["CHAOS_BACKEND_ADDRESS"])
    fleet = Fleet(workdir, env, args.restart_delay, args.agent_socket)
    fleet.start_all()
    ledger = Ledger()
    kills = Counter[str]()
    try:
        if not wait_for_api(url, 60):
            raise SystemExit(f"the API did not start: {(workdir / 'api.log').read_text()[-2000:]}")
        watch = PendingWatch(url)
        run_load(args, url, fleet, ledger, watch, kills, backend)
        fleet.restart_at = {role: 0.0 for role in fleet.restart_at}
        fleet.restart_due()
        wait_for_api(url, 60)
        ledger.api_answers()
        settle_s = settle(watch, ledger, args.settle)
        violations = check_invariants(url, ledger, Path(env["LBAAS_STATE_DIR"]))
        unclean = fleet.stop()
        violations += [{"kind": "unclean_exit", "detail": u} for u in unclean]
        violations += [{"kind": "crash_not_killed", "detail": c} for c in fleet.crashes]
    finally:
        if any(p.poll() is None for p in fleet.procs.values()):
            fleet.stop()
        for pid in haproxy_pids(env["LBAAS_STATE_DIR"]):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        backend.stop()
    figures = report(args, ledger, kills, watch, violations, settle_s)
    figures["longest_streaks"] = watch.longest_streaks(fleet.kill_log)
    figures["restart_to_ready_s"] = spread(fleet.restart_times)
    figures["outage_s"] = spread(fleet.outages)
    return figures


def spread(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        kind: {"median": round(statistics.median(times), 1), "max": round(max(times), 1)}
        for kind, times in samples.items()
        if times
    }


def run_load(
    args: argparse.Namespace,
    url: str,
    fleet: Fleet,
    ledger: Ledger,
    watch: PendingWatch,
    kills: Counter[str],
    backend: Backend,
) -> None:
    stop = threading.Event()
    client = Client(url, ledger, backend, args.load_balancers, watch)

    def load() -> None:
        while not stop.is_set():
            client.step()
            time.sleep(0.05)

    def watching() -> None:
        while not stop.is_set():
            if watch.poll() is not None:
                ledger.api_answers()
            fleet.restart_due()
            fleet.note_ready()
            time.sleep(0.25)

    threads = [threading.Thread(target=load), threading.Thread(target=watching)]
    for thread in threads:
        thread.start()
    end = time.monotonic() + args.duration
    try:
        while time.monotonic() < end:
            time.sleep(args.kill_interval * random.uniform(0.5, 1.5))
            kind = random.choice(args.kinds)
            if kind == "api":
                ledger.api_killed()
            if fleet.kill(kind) is not None:
                kills[kind] += 1
            elif kind == "api":
                ledger.api_spared()
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def report(
    args: argparse.Namespace,
    ledger: Ledger,
    kills: Counter[str],
    watch: PendingWatch,
    violations: list[dict[str, Any]],
    settle_s: float,
) -> dict[str, Any]:
    total = sum(kills.values())
    return {
        "quick": args.quick,
        "database": "postgresql" if args.database_url else "sqlite",
        "agent_socket": args.agent_socket,
        "duration_s": args.duration,
        "kill_interval_s": args.kill_interval,
        "kinds": list(args.kinds),
        "kills": dict(kills),
        "kills_total": total,
        "requests": dict(ledger.requests),
        "acknowledged_creates": len(ledger.created),
        "acknowledged_deletes": len(ledger.deleted),
        "unanswered_deletes": len(ledger.delete_sent - ledger.deleted),
        "refusals": ledger.refusals,
        "api_outages": len(ledger.outages),
        "server_errors": len(ledger.server_errors),
        "settle_s": round(settle_s, 1),
        "longest_pending_s": round(watch.longest, 1),
        "longest_pending_merged_s": round(watch.longest_merged, 1),
        "longest_pending_id": watch.longest_id,
        "violations": violations,
        "violation_count": len(violations),
        "targets": {
            "at_least_100_kills": total >= 100,
            "zero_violations": not violations,
            "longest_pending_within_10s": watch.longest <= 10.0,
        },
        "load": uptime(),
        "cpus": os.cpu_count(),
    }


def run_case(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    if args.case == "single-crash":
        from chaos_single import single_crash

        return single_crash(args, workdir)
    if args.case in ("forged-flood", "stalled-agent"):
        from chaos_health import health_case

        return health_case(args, workdir)
    return campaign(args, workdir)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of about a minute")
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of killing")
    parser.add_argument("--kill-interval", type=float, default=1.5, help="mean seconds per kill")
    parser.add_argument("--restart-delay", type=float, default=0.5)
    parser.add_argument("--settle", type=float, default=60.0, help="longest wait at the end")
    parser.add_argument("--load-balancers", type=int, default=6, help="live ones to keep")
    parser.add_argument("--database-url", default="", help="PostgreSQL URL (default SQLite)")
    parser.add_argument(
        "--agent-socket",
        choices=("own", "inherited"),
        default="inherited",
        help="the agent binds its own port, or inherits one the campaign holds (systemd-like)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--log-level", default="WARNING", help="of the lbaas processes")
    parser.add_argument(
        "--kinds",
        type=lambda text: tuple(text.split(",")),
        default=KINDS,
        help="comma-separated kinds of process to kill (default: all of " + ",".join(KINDS) + ")",
    )
    parser.add_argument(
        "--case",
        choices=CASES,
        default="campaign",
        help="campaign: the random kills; single-crash: PENDING after one crash of each "
        "kind and serve's time to answer (chaos_single.py); forged-flood, stalled-agent: "
        "the health manager under a forged heartbeat flood, and a stalled agent whose only "
        "backend dies (chaos_health.py)",
    )
    parser.add_argument("--trials", type=int, default=5, help="single-crash, stalled-agent")
    parser.add_argument("--flood-seconds", type=float, default=30.0, help="forged-flood: each")
    parser.add_argument("--stall-seconds", type=float, default=10.0, help="stalled-agent")
    parser.add_argument(
        "--deployments",
        type=lambda text: tuple(text.split(",")),
        default=("split", "serve"),
        help="single-crash: split (lbaas api/worker/health/agent) and/or serve",
    )
    args = parser.parse_args()
    if args.quick:
        args.duration, args.kill_interval, args.load_balancers = 15.0, 1.5, 3
    if shutil.which("haproxy") is None:
        print("haproxy is not installed", file=sys.stderr)
        return 1
    workdir = Path(tempfile.mkdtemp(prefix="lbaas-chaos-"))
    try:
        figures = run_case(args, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    json.dump(figures, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
