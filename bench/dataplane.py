# size: one driver for seven side-by-side measurements sharing one lbaas serve and one set of
# backends; each measurement is a function here, helpers live in bench/dataplane_*.py.
"""Data-plane benchmark: prints JSON figures for `lbaas serve` with the amphora provider.

    python bench/dataplane.py [--quick] [--generator auto|wrk|python] [--no-install]
                              [--sections tls,control] [--no-access-log]

Starts, on free loopback ports and a random 127.A.B.0/24 of its own: fast backends (one
HAProxy answering ``200 <name>`` on one port per backend), `lbaas serve` (amphora provider,
in-process agent and health manager, default settings) and a hand-written HAProxy. Then
measures, side by side in one run:

- HTTP requests/s and p99 latency through the lbaas VIP, through the same HAProxy binary
  with a minimal hand-written configuration (one frontend, one backend, the same two
  backends, the same maxconn) and directly to one backend, with keep-alive and with a new
  connection per request; repetitions are interleaved so drift hits all three alike; the
  VIP logs every request (access logs are on by default) and the hand-written HAProxy
  does not, and the access-log lines written are counted against the requests served;
  each HAProxy's own CPU per request (master and workers, from ``/proc``) is reported
  beside requests/s, as it moves far less with the machine's other load;
- HTTPS keep-alive requests/s and new TLS handshakes/s through a TERMINATED_HTTPS listener
  (certificate stored in the key manager) vs the hand-written HAProxy with ``ssl crt``
  (``bench/dataplane_tls.py``; needs wrk);
- POST member → first request that member serves through the VIP;
- POST of a full tree (one fully-populated LB create) → first request answered on the VIP;
- failed requests of a client looping without pause (keep-alive and new connections)
  while member adds, weight changes, drains and removals go through the API;
- kill -9 of the amphora's HAProxy master and workers → the VIP answers again.

Load comes from ``wrk`` when installed (as root, ``apt-get install -y wrk`` is tried first
unless ``--no-install``), else from asyncio clients in several processes; the JSON names the
generator and its concurrency. Generator, HAProxy and backends share this machine's CPUs,
so compare the columns of one run with each other, not figures across machines.

Medians over repetitions; ``--quick`` runs every measurement at tiny sizes (the smoke test).
Figures go to stdout as one JSON document; nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from dataplane_cpu import Meter, idle_seconds_per_s, medians, meters_of, per_request, read_all
from dataplane_loadgen import ContinuousClient, Generator, choose_generator, wait_until_served
from dataplane_procs import (
    HAPROXY,
    AddressPlan,
    HaproxyProcess,
    LbaasServe,
    backend_config,
    children_of,
    cpu_seconds,
    free_port,
    handwritten_config,
    haproxy_version,
)
from dataplane_tls import tls_figures

LB = "/v2/lbaas/loadbalancers"
TARGETS = {
    "throughput_ratio_min": 0.95,
    "member_served_ms": 200,
    "full_tree_serving_ms": 300,
    "reconfiguration_errors": 0,
    "crash_recovery_s": 5.0,
}
POOL_BACKENDS = ("b1", "b2")
EXTRA_BACKENDS = ("b3", "b4")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3) if values else 0.0


class Api:
    """The Octavia API of the `lbaas serve` under test."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=60)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self.http.request(method, path, json=body)
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json() if response.content else None

    def lb_status(self, lb_id: str) -> str | None:
        response = self.http.get(f"{LB}/{lb_id}")
        if response.status_code == 404:
            return None
        return str(response.json()["loadbalancer"]["provisioning_status"])

    def wait_active(self, lb_id: str, timeout: float = 60, poll: float = 0.005) -> float:
        """perf_counter time at which the load balancer was seen ACTIVE."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            status = self.lb_status(lb_id)
            if status == "ACTIVE":
                return time.perf_counter()
            if status in ("ERROR", None):
                raise RuntimeError(f"load balancer {lb_id} is {status}")
            time.sleep(poll)
        raise RuntimeError(f"load balancer {lb_id} not ACTIVE after {timeout}s")

    def delete_lb(self, lb_id: str, timeout: float = 60) -> None:
        self.wait_active(lb_id)
        self.http.delete(f"{LB}/{lb_id}", params={"cascade": "true"})
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.lb_status(lb_id) in (None, "DELETED"):
                return
            time.sleep(0.02)
        raise RuntimeError(f"load balancer {lb_id} not deleted after {timeout}s")


class ActiveWatcher:
    """A thread noting when a load balancer turns ACTIVE, while the main thread polls the VIP."""

    def __init__(self, url: str, lb_id: str) -> None:
        self._api = Api(url)
        self._lb_id = lb_id
        self.at: float | None = None
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.at = self._api.wait_active(self._lb_id)
        except (RuntimeError, httpx.HTTPError) as exc:
            self.error = str(exc)

    def join(self) -> float | None:
        self._thread.join(90)
        self._api.http.close()
        return self.at


@dataclass
class Bench:
    """Everything a measurement needs: the API, addresses, backends and the main LB."""

    api: Api
    url: str
    state_dir: Path
    plan: AddressPlan
    backend_ports: dict[str, int]
    lb_id: str = ""
    pool_id: str = ""
    vip: str = ""
    vip_port: int = 0

    def member_body(self, name: str, weight: int = 1) -> dict[str, Any]:
        return {
            "address": self.plan.backend_address,
            "protocol_port": self.backend_ports[name],
            "name": name,
            "weight": weight,
        }

    def tree_body(self, name: str, port: int) -> dict[str, Any]:
        return {
            "loadbalancer": {
                "name": name,
                "vip_subnet_id": "7f000a00-0000-4000-8000-000000000001",
                "listeners": [
                    {
                        "name": f"{name}-http",
                        "protocol": "HTTP",
                        "protocol_port": port,
                        "default_pool": {
                            "name": f"{name}-pool",
                            "protocol": "HTTP",
                            "lb_algorithm": "ROUND_ROBIN",
                            "members": [self.member_body(b) for b in POOL_BACKENDS],
                            "healthmonitor": {
                                "type": "HTTP",
                                "delay": 5,
                                "timeout": 3,
                                "max_retries": 3,
                            },
                        },
                    }
                ],
            }
        }

    def members_path(self) -> str:
        return f"/v2/lbaas/pools/{self.pool_id}/members"


def amphora_dir(state_dir: Path, lb_id: str) -> Path | None:
    """The agent's directory of the amphora whose HAProxy serves ``lb_id``."""
    for config in sorted((state_dir / "amphorae").glob("*/haproxy.cfg")):
        try:
            with open(config) as f:
                if lb_id in f.readline():
                    return config.parent
        except OSError:
            continue
    return None


def amphora_cpu(bench: Bench) -> float:
    """CPU seconds used so far by the HAProxy serving the benchmark's load balancer."""
    directory = amphora_dir(bench.state_dir, bench.lb_id)
    if directory is None:
        return 0.0
    return cpu_seconds(int((directory / "haproxy.pid").read_text().split()[0]))


def create_main_lb(bench: Bench) -> dict[str, Any]:
    port = free_port()
    lb = bench.api.request("POST", LB, bench.tree_body("bench", port))["loadbalancer"]
    bench.lb_id = lb["id"]
    bench.vip = lb["vip_address"]
    bench.vip_port = port
    bench.api.wait_active(bench.lb_id)
    pools = bench.api.request("GET", f"/v2/lbaas/pools?loadbalancer_id={bench.lb_id}")["pools"]
    bench.pool_id = pools[0]["id"]
    seen: set[str] = set()
    if wait_until_served(bench.vip, port, _collect(seen, set(POOL_BACKENDS)), 30, burst=2) is None:
        raise RuntimeError(f"the VIP {bench.vip}:{port} does not serve both backends: {seen}")
    return dict(lb)


def _collect(seen: set[str], wanted: set[str]) -> Callable[[str], bool]:
    def accept(body: str) -> bool:
        seen.add(body)
        return wanted <= seen

    return accept


# --- 1. throughput and latency ----------------------------------------------------------------


def throughput(
    generator: Generator,
    targets: dict[str, tuple[str, int]],
    seconds: float,
    repetitions: int,
    warmup: bool,
    cpu: dict[str, Callable[[], float]] | None = None,
    meters: Mapping[str, Meter] | None = None,
) -> dict[str, Any]:
    """Interleaved runs; with ``cpu`` (CPU seconds used so far, per target), also the
    target's CPU microseconds per request: unlike requests/s, it hardly moves with what
    else the machine runs, so it shows a configuration's own cost under shared load.
    With ``meters``, the same for every process of the benchmark (``dataplane_cpu``)."""
    modes = {"keepalive": True, "new_connection_per_request": False}
    cpu = cpu or {}
    meters = meters or {}
    served = dict.fromkeys(targets, 0)  # every request answered, warm-up included
    if warmup:
        for name, (host, port) in targets.items():
            served[name] += generator.measure(host, port, 1, True).requests
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        mode: {name: [] for name in targets} for mode in modes
    }
    names = list(targets)
    for rep in range(repetitions):
        for mode, keepalive in modes.items():
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for name in order:
                host, port = targets[name]
                before = cpu[name]() if name in cpu else 0.0
                every_before = read_all(meters)
                run = generator.measure(host, port, seconds, keepalive).as_dict()
                if name in cpu and run["requests"]:
                    used = cpu[name]() - before
                    run["cpu_us_per_request"] = round(used * 1e6 / run["requests"], 1)
                if meters and run["requests"]:
                    every_after = read_all(meters)
                    run["by_process"] = per_request(every_before, every_after, run["requests"])
                runs[mode][name].append(run)
                served[name] += run["requests"]
    figures: dict[str, Any] = {"requests_served": served}
    for mode in modes:
        section: dict[str, Any] = {}
        for name in names:
            samples = runs[mode][name]
            section[name] = {
                "requests_per_s": _median([s["requests_per_s"] for s in samples]),
                "p50_ms": _median([s["p50_ms"] for s in samples]),
                "p99_ms": _median([s["p99_ms"] for s in samples]),
                "errors": sum(s["errors"] for s in samples),
                "requests_per_s_samples": [s["requests_per_s"] for s in samples],
            }
            cpu_samples = [s["cpu_us_per_request"] for s in samples if "cpu_us_per_request" in s]
            if cpu_samples:
                section[name]["haproxy_cpu_us_per_request"] = _median(cpu_samples)
            by_process = medians([s["by_process"] for s in samples if "by_process" in s])
            if by_process:
                section[name]["cpu_us_per_request_by_process"] = by_process
        pairs = zip(runs[mode]["lbaas_vip"], runs[mode]["handwritten_haproxy"], strict=True)
        paired = [
            lb["requests_per_s"] / hand["requests_per_s"]
            for lb, hand in pairs
            if hand["requests_per_s"] > 0
        ]
        section["ratio_lbaas_to_handwritten"] = round(statistics.median(paired), 3) if paired else 0
        hand_p99 = section["handwritten_haproxy"]["p99_ms"]
        section["p99_ratio_lbaas_to_handwritten"] = (
            round(section["lbaas_vip"]["p99_ms"] / hand_p99, 3) if hand_p99 else 0
        )
        if "lbaas_vip" in cpu and "handwritten_haproxy" in cpu:
            lb_cpu = section["lbaas_vip"].get("haproxy_cpu_us_per_request", 0)
            hand_cpu = section["handwritten_haproxy"].get("haproxy_cpu_us_per_request", 0)
            section["haproxy_cpu_ratio_lbaas_to_handwritten"] = (
                round(lb_cpu / hand_cpu, 3) if hand_cpu else 0
            )
        if meters:
            section["all_processes_cpu_ratio_lbaas_to_handwritten"] = _all_ratio(section)
        figures[mode] = section
    return figures


def _all_ratio(section: dict[str, Any]) -> float:
    """CPU per request of all the benchmark's processes, VIP run vs hand-written run."""
    lb = section["lbaas_vip"].get("cpu_us_per_request_by_process", {}).get("all_processes", 0)
    hand = section["handwritten_haproxy"].get("cpu_us_per_request_by_process", {})
    return round(lb / hand["all_processes"], 3) if hand.get("all_processes") else 0


def access_log_lines(state_dir: Path, lb_id: str) -> int:
    """Lines in the load balancer's access log, rotated files included."""
    total = 0
    for path in (state_dir / "access-logs").glob(f"{lb_id}.log*"):
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                total += chunk.count(b"\n")
    return total


def access_log_figures(bench: Bench, measured: dict[str, Any], before: int) -> dict[str, Any]:
    """Lines written for the VIP's throughput runs against the requests they were served.

    The VIP logs every request (lbaas's default); the hand-written HAProxy logs nothing,
    so the throughput ratios above are "with logging vs without" (Octavia: 0.76). wrk
    counts only answered requests and HAProxy also logs those cut when wrk stops, so a
    few more lines than requests is normal; fewer means lines were lost.
    """
    served = int(measured["requests_served"]["lbaas_vip"])
    deadline = time.monotonic() + 10
    written = access_log_lines(bench.state_dir, bench.lb_id) - before
    while written < served and time.monotonic() < deadline:  # the reader may lag a little
        time.sleep(0.2)
        written = access_log_lines(bench.state_dir, bench.lb_id) - before
    return {
        "connection_logging": True,
        "requests_served_by_vip": served,
        "lines_written": written,
        "lines_missing": max(0, served - written),
        "throughput_ratio_keepalive_logging_vs_handwritten_without": measured["keepalive"][
            "ratio_lbaas_to_handwritten"
        ],
        "throughput_ratio_new_connection_logging_vs_handwritten_without": measured[
            "new_connection_per_request"
        ]["ratio_lbaas_to_handwritten"],
        "octavia_reference_ratio": 0.76,
    }


# --- 2. POST member → first request it serves --------------------------------------------------


def member_to_first_served(bench: Bench, repetitions: int) -> dict[str, Any]:
    served_ms: list[float] = []
    active_ms: list[float] = []
    api_ms: list[float] = []
    misses = 0
    name = EXTRA_BACKENDS[0]
    for _ in range(repetitions):
        start = time.perf_counter()
        member = bench.api.request(
            "POST", bench.members_path(), {"member": bench.member_body(name)}
        )
        answered = time.perf_counter()
        watcher = ActiveWatcher(bench.url, bench.lb_id)
        burst = len(POOL_BACKENDS) + 1
        served = wait_until_served(
            bench.vip, bench.vip_port, lambda body: body == name, 30, burst=burst, interval=0.002
        )
        active = watcher.join()
        api_ms.append(_ms(answered - start))
        if served is None:
            misses += 1
        else:
            served_ms.append(_ms(served - start))
        if active is not None:
            active_ms.append(_ms(active - start))
        bench.api.wait_active(bench.lb_id)
        bench.api.request("DELETE", f"{bench.members_path()}/{member['member']['id']}")
        bench.api.wait_active(bench.lb_id)
    median = _median(served_ms)
    return {
        "median_ms": median,
        "samples_ms": served_ms,
        "api_answered_median_ms": _median(api_ms),
        "active_median_ms": _median(active_ms),
        "never_served": misses,
        "target_ms": TARGETS["member_served_ms"],
        "met": bool(served_ms) and misses == 0 and median <= TARGETS["member_served_ms"],
        "method": (
            "POST member, then poll the VIP with new connections, "
            f"{burst} requests back to back per 2 ms tick (one per round-robin server), "
            "until a response body names the new member"
        ),
    }


# --- 3. POST of a full tree → first response on the VIP ---------------------------------------


def full_tree_to_first_response(bench: Bench, repetitions: int) -> dict[str, Any]:
    served_ms: list[float] = []
    active_ms: list[float] = []
    api_ms: list[float] = []
    misses = 0
    for i in range(repetitions):
        port = free_port()
        start = time.perf_counter()
        lb = bench.api.request("POST", LB, bench.tree_body(f"tree-{i}", port))["loadbalancer"]
        answered = time.perf_counter()
        watcher = ActiveWatcher(bench.url, lb["id"])
        served = wait_until_served(
            lb["vip_address"], port, lambda body: body in POOL_BACKENDS, 30, interval=0.002
        )
        active = watcher.join()
        api_ms.append(_ms(answered - start))
        if served is None:
            misses += 1
        else:
            served_ms.append(_ms(served - start))
        if active is not None:
            active_ms.append(_ms(active - start))
        bench.api.delete_lb(lb["id"])
    median = _median(served_ms)
    return {
        "median_ms": median,
        "samples_ms": served_ms,
        "api_answered_median_ms": _median(api_ms),
        "active_median_ms": _median(active_ms),
        "never_served": misses,
        "target_ms": TARGETS["full_tree_serving_ms"],
        "met": bool(served_ms) and misses == 0 and median <= TARGETS["full_tree_serving_ms"],
        "method": (
            "one fully-populated POST (listener, pool, 2 members, HTTP health monitor); "
            "poll the new VIP with a new connection every 2 ms until a backend answers"
        ),
    }


# --- 4. errors during reconfiguration under load ---------------------------------------------


def reconfiguration_under_load(bench: Bench, changes: int) -> dict[str, Any]:
    """Cycle add → weight 5 → drain (weight 0) → remove over an extra member, under load."""
    client = ContinuousClient(bench.vip, bench.vip_port)
    client.start()
    time.sleep(0.3)
    kinds: Counter[str] = Counter()
    change_ms: list[float] = []
    windows: list[tuple[float, float, str]] = []
    api_errors: list[str] = []
    member_id = ""
    for i in range(changes):
        step = i % 4
        name = EXTRA_BACKENDS[(i // 4) % len(EXTRA_BACKENDS)]
        kind = ("add", "weight", "drain", "remove")[step]
        start = time.perf_counter()
        try:
            if step == 0:
                created = bench.api.request(
                    "POST", bench.members_path(), {"member": bench.member_body(name)}
                )
                member_id = created["member"]["id"]
            elif step in (1, 2):
                weight = 5 if step == 1 else 0
                bench.api.request(
                    "PUT", f"{bench.members_path()}/{member_id}", {"member": {"weight": weight}}
                )
            else:
                bench.api.request("DELETE", f"{bench.members_path()}/{member_id}")
            bench.api.wait_active(bench.lb_id)
        except (RuntimeError, httpx.HTTPError) as exc:
            api_errors.append(str(exc)[:300])
            bench.api.wait_active(bench.lb_id)
            continue
        kinds[kind] += 1
        windows.append((start, time.perf_counter(), kind))
        change_ms.append(_ms(time.perf_counter() - start))
    time.sleep(0.3)
    if changes % 4:
        bench.api.request("DELETE", f"{bench.members_path()}/{member_id}")
        bench.api.wait_active(bench.lb_id)
    traffic = client.stop()
    return {
        "changes": sum(kinds.values()),
        "change_kinds": dict(kinds),
        "change_to_active_median_ms": _median(change_ms),
        "change_to_active_median_ms_by_kind": {
            kind: _median([_ms(end - start) for start, end, k in windows if k == kind])
            for kind in kinds
        },
        "api_errors": len(api_errors),
        "api_error_examples": api_errors[:3],
        "requests": traffic.pop("requests"),
        "errors": traffic.pop("errors"),
        "error_kinds": traffic.pop("error_kinds"),
        "errors_by_change_in_flight": _errors_by_change(client.error_times, windows),
        "clients": traffic,
        "target_errors": TARGETS["reconfiguration_errors"],
        "met": traffic.get("seconds", 0) > 0 and not api_errors and _no_errors(traffic),
        "method": (
            "two client processes send requests without pause through the VIP (one keep-alive "
            "connection, one new connection per request, no retries) while each change is "
            "applied through the API and waited for (ACTIVE) before the next"
        ),
    }


def _errors_by_change(
    times: list[float], windows: list[tuple[float, float, str]]
) -> dict[str, int]:
    """Which kind of change was in flight (POST/PUT/DELETE sent, ACTIVE not yet seen)."""
    found: Counter[str] = Counter()
    for at in times:
        kind = next((k for start, end, k in windows if start <= at <= end), "none")
        found[kind] += 1
    return dict(found)


def _no_errors(traffic: dict[str, Any]) -> bool:
    return all(part.get("errors", 0) == 0 for part in traffic.values() if isinstance(part, dict))


# --- 5. amphora crash → VIP answers again ------------------------------------------------------


def crash_recovery(bench: Bench, repetitions: int) -> dict[str, Any]:
    recover_s: list[float] = []
    details = []
    for _ in range(repetitions):
        if wait_until_served(bench.vip, bench.vip_port, bool, 30, interval=0.01) is None:
            raise RuntimeError("the VIP does not answer before the crash")
        directory = amphora_dir(bench.state_dir, bench.lb_id)
        if directory is None:
            raise RuntimeError("cannot find the amphora's directory")
        master = int((directory / "haproxy.pid").read_text().split()[0])
        victims = [master, *children_of(master)]
        start = time.perf_counter()
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        went_down = wait_until_served(bench.vip, bench.vip_port, bool, 0.05) is None
        served = wait_until_served(bench.vip, bench.vip_port, bool, 120, interval=0.005)
        if served is None:
            raise RuntimeError("the VIP did not answer again within 120 s")
        seconds = round(served - start, 3)
        recover_s.append(seconds)
        after = amphora_dir(bench.state_dir, bench.lb_id)
        new_master = None
        if after is not None and (after / "haproxy.pid").exists():
            new_master = int((after / "haproxy.pid").read_text().split()[0])
        details.append(
            {
                "seconds": seconds,
                "killed_pids": len(victims),
                "vip_refused_after_kill": went_down,
                "recovered_by": "agent restart (same amphora)"
                if after == directory
                else "failover (new amphora)",
                "new_master_pid": new_master,
            }
        )
        bench.api.wait_active(bench.lb_id)
        time.sleep(1.5)  # let heartbeats resume before the next crash
    median = _median(recover_s)
    return {
        "median_s": median,
        "samples_s": recover_s,
        "runs": details,
        "target_s": TARGETS["crash_recovery_s"],
        "met": bool(recover_s) and median <= TARGETS["crash_recovery_s"],
        "method": (
            "SIGKILL the amphora's HAProxy master and all its workers at once; poll the VIP "
            "with a new connection every 5 ms until it answers 200"
        ),
    }


# --- driver ------------------------------------------------------------------------------------


def _rendered_maxconn(config: str) -> int:
    match = re.search(r"^global\b.*?^\s+maxconn\s+(\d+)", config, re.MULTILINE | re.DOTALL)
    return int(match.group(1)) if match else 2000


def _lbaas_settings_in_force() -> dict[str, Any]:
    from lbaas.config import Settings

    defaults = Settings()
    found: dict[str, Any] = {
        "health.heartbeat_interval_s": defaults.health.heartbeat_interval,
        "health.stale_after_s": defaults.health.stale_after,
        "worker.poll_interval_s": defaults.worker.poll_interval,
        "worker.threads": defaults.worker.threads,
        "providers.amphora_maxconn": defaults.providers.amphora_maxconn,
    }
    try:
        from lbaas.fleet import agent_service as service

        found["agent.supervise_interval_s"] = service.SUPERVISE_INTERVAL
    except (ImportError, AttributeError):
        pass
    return found


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    quick = args.quick
    notes: list[str] = []
    generator = choose_generator(args.generator, args.connections, not args.no_install, notes)
    plan = AddressPlan.random()
    ports = {name: free_port() for name in (*POOL_BACKENDS, *EXTRA_BACKENDS)}
    backends = HaproxyProcess("backends", backend_config(plan.backend_address, ports), workdir)
    backends.start([(plan.backend_address, port) for port in ports.values()])
    processes: list[HaproxyProcess] = [backends]
    served = LbaasServe.start(workdir, plan, access_log=not args.no_access_log)
    api = Api(served.url)
    bench = Bench(api, served.url, served.state_dir, plan, ports)
    try:
        create_main_lb(bench)
        directory = amphora_dir(bench.state_dir, bench.lb_id)
        if directory is None:
            raise RuntimeError("no amphora directory for the benchmark load balancer")
        rendered = (directory / "haproxy.cfg").read_text()
        maxconn = _rendered_maxconn(rendered)
        hand_port = free_port()
        servers = [(name, plan.backend_address, ports[name]) for name in POOL_BACKENDS]
        hand = HaproxyProcess(
            "handwritten",
            handwritten_config(plan.handwritten_address, hand_port, servers, maxconn),
            workdir,
        )
        processes.append(hand)
        hand.start([(plan.handwritten_address, hand_port)])
        rendered_check = HaproxyProcess("rendered-copy", rendered, workdir)
        figures: dict[str, Any] = {
            "quick": quick,
            "generator": generator.describe(),
            "host": {
                "cpus": os.cpu_count(),
                "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
                "haproxy_version": haproxy_version(),
                "haproxy_nbthread": "HAProxy default (one per CPU) in all three configurations",
            },
            "lbaas_settings": _lbaas_settings_in_force(),
            "configs": {
                "rendered_lines": len(rendered.splitlines()),
                "handwritten_lines": len(hand.config_path.read_text().splitlines()),
                "maxconn": maxconn,
                "haproxy_check_ms_rendered": round(
                    statistics.median(rendered_check.check_ms() for _ in range(3)), 1
                ),
            },
        }
        targets = {
            "lbaas_vip": (bench.vip, bench.vip_port),
            "handwritten_haproxy": (plan.handwritten_address, hand_port),
            "direct_backend": (plan.backend_address, ports[POOL_BACKENDS[0]]),
        }
        cpu = {
            "lbaas_vip": lambda: amphora_cpu(bench),
            "handwritten_haproxy": lambda: cpu_seconds(hand.master_pid()),
        }
        seconds = args.seconds if args.seconds else (1.0 if quick else 3.0)
        reps = args.repetitions if args.repetitions else (1 if quick else 5)
        meters = meters_of(
            served.proc.pid,
            backends.master_pid(),
            {"vip_haproxy": cpu["lbaas_vip"], "handwritten_haproxy": cpu["handwritten_haproxy"]},
        )
        figures["idle_cpu_ms_per_s"] = idle_seconds_per_s(meters, 1.0 if quick else 3.0)
        lines_before = access_log_lines(bench.state_dir, bench.lb_id)
        figures["throughput"] = {
            "seconds_per_run": seconds,
            "repetitions": reps,
            **throughput(
                generator, targets, seconds, reps, warmup=not quick, cpu=cpu, meters=meters
            ),
        }
        figures["access_log"] = (
            {"connection_logging": False}
            if args.no_access_log
            else access_log_figures(bench, figures["throughput"], lines_before)
        )
        if "tls" in args.sections:
            figures["tls"], tls_hand = tls_figures(
                bench,
                generator,
                workdir,
                maxconn,
                servers,
                throughput,
                (seconds, reps, not quick),
                vip_cpu=lambda: amphora_cpu(bench),
                meters=meters,
            )
            if tls_hand is not None:
                processes.append(tls_hand)
        keepalive = figures["throughput"]["keepalive"]["ratio_lbaas_to_handwritten"]
        close = figures["throughput"]["new_connection_per_request"]["ratio_lbaas_to_handwritten"]
        verdicts: dict[str, Any] = {
            "throughput_ratio_keepalive": _verdict(keepalive, TARGETS["throughput_ratio_min"]),
            "throughput_ratio_new_connection": _verdict(close, TARGETS["throughput_ratio_min"]),
            # None: nothing was logged (--no-access-log), so nothing could be lost.
            "access_log_no_line_lost": (
                None if args.no_access_log else figures["access_log"]["lines_missing"] == 0
            ),
            **_tls_verdicts(figures.get("tls", {"skipped": "not asked"})),
        }
        if "control" in args.sections:
            figures["member_post_to_first_served"] = member_to_first_served(
                bench, 2 if quick else 7
            )
            figures["full_tree_post_to_first_response"] = full_tree_to_first_response(
                bench, 2 if quick else 7
            )
            figures["reconfiguration_under_load"] = reconfiguration_under_load(
                bench, 8 if quick else 100
            )
            figures["amphora_crash_recovery"] = crash_recovery(bench, 1 if quick else 3)
            verdicts |= {
                "member_served_within_200ms": figures["member_post_to_first_served"]["met"],
                "full_tree_serving_within_300ms": figures["full_tree_post_to_first_response"][
                    "met"
                ],
                "zero_errors_during_reconfiguration": figures["reconfiguration_under_load"]["met"],
                "crash_recovery_within_5s": figures["amphora_crash_recovery"]["met"],
            }
        figures["targets"] = verdicts
        figures["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
        figures["notes"] = notes
        return figures
    except BaseException:
        print(served.log_tail(), file=sys.stderr)
        raise
    finally:
        try:
            for lb in api.request("GET", LB)["loadbalancers"]:
                api.delete_lb(lb["id"])
        except (RuntimeError, httpx.HTTPError) as exc:
            print(f"cleanup: {exc}", file=sys.stderr)
        api.http.close()
        served.stop()
        for proc in processes:
            proc.stop()


def _verdict(ratio: float, minimum: float) -> dict[str, Any]:
    return {"ratio": ratio, "min": minimum, "met": ratio >= minimum}


def _tls_verdicts(tls: dict[str, Any]) -> dict[str, Any]:
    if "skipped" in tls:
        return {}
    minimum = TARGETS["throughput_ratio_min"]
    return {
        "tls_ratio_keepalive": _verdict(tls["ratio_keepalive"], minimum),
        "tls_ratio_new_handshakes": _verdict(tls["ratio_handshakes"], minimum),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--generator", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--no-install", action="store_true", help="never apt-get install wrk")
    parser.add_argument("--connections", type=int, default=32, help="load connections")
    parser.add_argument("--seconds", type=float, default=0, help="seconds per throughput run")
    parser.add_argument("--repetitions", type=int, default=0, help="throughput repetitions")
    parser.add_argument("--keep-workdir", action="store_true", help="keep configs and logs")
    parser.add_argument(
        "--no-access-log",
        action="store_true",
        help="render the VIP without logging (what logging costs, within this harness)",
    )
    parser.add_argument(
        "--sections",
        type=lambda s: set(s.split(",")),
        default={"tls", "control"},
        help="besides plain HTTP throughput: tls, control (member/tree/reconfiguration/crash)",
    )
    args = parser.parse_args()
    if shutil.which(HAPROXY) is None and not Path(HAPROXY).exists():
        sys.exit(f"{HAPROXY} not found: the data-plane benchmark needs HAProxy")
    workdir = Path(tempfile.mkdtemp(prefix="lbaas-dataplane-"))
    try:
        figures = run(args, workdir)
    finally:
        if args.keep_workdir:
            print(f"workdir kept: {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
