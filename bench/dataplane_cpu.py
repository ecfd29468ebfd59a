"""CPU of every process the data-plane benchmark runs, read before and after each run.

On a 2-core machine where the load generator, HAProxy, the backends and lbaas share the
cores, requests/s is set by the CPU the *whole machine* spends per request, not only
HAProxy's: a process outside HAProxy that costs CPU per request (the agent's access-log
reader, a poller) takes it from HAProxy and wrk. So every run records, per process group,
user + system CPU (all threads, from ``/proc/<pid>/stat``) divided by the requests served:

- ``vip_haproxy`` / ``handwritten_haproxy``: the HAProxy under test (master and workers);
- ``backends``: the HAProxy playing the members;
- ``lbaas_serve``: the ``lbaas serve`` process (API, in-process agent with its access-log
  reader threads, health manager), of which ``lbaas_serve_access_log_reader``: the
  reader threads alone; ``lbaas_worker``: its child worker process;
- ``load_generator``: wrk or ``openssl s_time`` (this process's waited-for children);
- ``bench_driver``: this script;
- ``machine``: every CPU's busy time (``/proc/stat``), other sessions' load included.

Used by ``bench/dataplane.py``; not a library.
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from dataplane_procs import children_of, cpu_seconds

from lbaas.amphora.access_log import THREAD_NAME

Meter = Callable[[], float]
_TICK = os.sysconf("SC_CLK_TCK")
MACHINE = "machine"
#: Part of ``lbaas_serve``: its access-log reader threads (left out of ``all_processes``).
READER = "lbaas_serve_access_log_reader"


def process_seconds(pid: int) -> float:
    """User + system CPU seconds of one process, all its threads (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def children_seconds(pid: int) -> float:
    """CPU seconds of ``pid``'s child processes now running but HAProxy (counted apart)."""
    return sum(process_seconds(child) for child in children_of(pid) if not _is_haproxy(child))


def _is_haproxy(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "haproxy"
    except OSError:
        return False


def thread_seconds(pid: int, name: str) -> float:
    """CPU seconds of ``pid``'s threads called ``name`` (the agent's access-log readers)."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            if (task / "comm").read_text().strip() != name:
                continue
            fields = (task / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / _TICK
    return total


def generator_seconds() -> float:
    """CPU of this process's finished children: each wrk / s_time run once it is waited for."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def machine_seconds() -> float:
    """Busy CPU seconds of the whole machine, all CPUs (idle and iowait excluded)."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / _TICK


def meters_of(
    serve_pid: int, backends_pid: int, haproxies: Mapping[str, Meter]
) -> dict[str, Meter]:
    """Every process group of the benchmark; ``haproxies``: name → the HAProxies under test."""
    return {
        **haproxies,
        "backends": lambda: cpu_seconds(backends_pid),
        "lbaas_serve": lambda: process_seconds(serve_pid),
        READER: lambda: thread_seconds(serve_pid, THREAD_NAME),
        "lbaas_worker": lambda: children_seconds(serve_pid),
        "load_generator": generator_seconds,
        "bench_driver": time.process_time,
        MACHINE: machine_seconds,
    }


def read_all(all_meters: Mapping[str, Meter]) -> dict[str, float]:
    return {name: meter() for name, meter in all_meters.items()}


def per_request(
    before: Mapping[str, float], after: Mapping[str, float], requests: int
) -> dict[str, float]:
    """µs per request of each group between two readings, and ``all_processes``: their sum
    (the machine-wide figure without other sessions' load)."""
    used = {name: (after[name] - before[name]) * 1e6 / requests for name in before}
    used["all_processes"] = sum(v for name, v in used.items() if name not in (MACHINE, READER))
    return {name: round(v, 1) for name, v in used.items()}


def medians(samples: list[dict[str, float]]) -> dict[str, float]:
    """Per group, the median over runs."""
    if not samples:
        return {}
    return {name: round(statistics.median(s[name] for s in samples), 1) for name in samples[0]}


def idle_seconds_per_s(all_meters: Mapping[str, Meter], seconds: float) -> dict[str, float]:
    """CPU ms per second each group uses while no load runs (pollers, heartbeats)."""
    before = read_all(all_meters)
    time.sleep(seconds)
    after = read_all(all_meters)
    return {name: round((after[name] - before[name]) * 1000 / seconds, 1) for name in before}
