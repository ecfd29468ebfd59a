"""A node holding many load balancers against one holding one, packet for packet (issue 34).

Used by ``bench/l4_node_scale.py``; not a library. Two labs of the same shape (the L4 test
lab: client, balancer and two HAProxy backends answering themselves, each in namespaces
of their own): the reference balancer holds one load balancer on the VIP, the measured one
the same load balancer beside all the others. The machine is shared (two cores, other
engineers' runs), so no figure is taken alone: short wrk bursts alternate between the two
labs, the order flipping each round, and each round's measured/reference ratio is kept;
the medians of those ratios are the figures (with their quartiles). Two modes:

- ``new_connection``: ``Connection: close``, so every request is a new flow, whose first
  packet misses conntrack and walks the NAT chain: the dispatch map's lookup, the load
  balancer's chain, the slot map, the DNAT. What the table's size could change.
- ``keepalive``: established flows, which conntrack translates without the NAT chains.

Each mode gives requests/s and CPU per request: wrk's own (its rusage) plus the two
backends' (``/proc/<pid>/stat``). The balancer namespace's forwarding runs in the softirq
of the task that sent the packet (veth delivers on the sending CPU; this kernel has no
IRQ time accounting), so the kernel's per-packet cost is inside that CPU; CPU is less
bent by the other runs than wall time is (a burst that waits for a core spends no CPU).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
from typing import Any

import l4_c
from l4_lab import VIP

MODES = ("new_connection", "keepalive")
PERF_HZ = 4999
#: nf_tables' own functions: the hooks' chain walk, the maps' lookups, jhash, the NAT
#: expression (conntrack and the NAT core are the same whatever the table holds).
NF_TABLES = re.compile(r"^_*(nft_|nf_tables_)")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _process_cpu_s(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def burst(lab: Any, backends: list[int], mode: str, seconds: float) -> dict[str, float]:
    """One wrk run through ``lab``'s VIP: requests/s and CPU microseconds per request."""
    prefix = ("ip", "netns", "exec", lab.client)
    own, theirs = _children_cpu_s(), _process_cpu_s(backends)
    run = l4_c.wrk_run(prefix, VIP, 80, seconds, mode == "keepalive")
    cpu = _children_cpu_s() - own + _process_cpu_s(backends) - theirs
    if run["errors"] or not run["per_s"]:
        raise RuntimeError(f"wrk errors through the VIP: {run}")
    requests = run["per_s"] * max(1, round(seconds))
    return {"per_s": run["per_s"], "cpu_us": cpu / requests * 1e6}


def nft_burst(lab: Any, seconds: float) -> float:
    """One new-connection wrk run under ``perf record`` (cpu-clock samples of wrk's task,
    in whose softirq the balancer namespace handles the client's packets): microseconds
    of nf_tables code per request, the NAT chain's walk of each new flow's first packet."""
    with tempfile.TemporaryDirectory(prefix="l4-perf-") as scratch:
        data = os.path.join(scratch, "perf.data")
        perf = ("perf", "record", "-q", "-e", "cpu-clock", "-F", str(PERF_HZ), "-o", data, "--")
        run = l4_c.wrk_run((*perf, "ip", "netns", "exec", lab.client), VIP, 80, seconds, False)
        report = subprocess.run(
            ["perf", "report", "-i", data, "--stdio", "--sort", "sym", "-F", "sample,sym"],
            capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
    samples = 0
    for line in report.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0].isdigit() and NF_TABLES.match(fields[2]):
            samples += int(fields[0])
    requests = run["per_s"] * max(1, round(seconds))
    return samples / PERF_HZ / max(requests, 1) * 1e6


def have_perf() -> bool:
    return shutil.which("perf") is not None


def compare(
    reference: tuple[Any, list[int]],
    measured: tuple[Any, list[int]],
    seconds: float,
    rounds: int,
    perf: bool,
) -> dict[str, Any]:
    """Alternating bursts through both labs (lab, its backends' pids); per mode the
    measured lab's medians and the medians of the per-round ratios to the reference;
    ``perf``: also a new-connection burst through each under ``perf record``
    (``new_flow_nft_us``: nf_tables' microseconds per new flow)."""
    samples: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {m: [] for m in MODES}
    for index in range(rounds):
        order = (reference, measured) if index % 2 == 0 else (measured, reference)
        for mode in MODES:
            first, second = (burst(lab, pids, mode, seconds) for lab, pids in order)
            samples[mode].append((first, second) if index % 2 == 0 else (second, first))
        if perf:
            one, other = ({"nft_us": nft_burst(lab, seconds)} for lab, _pids in order)
            samples.setdefault("new_flow", []).append(
                (one, other) if index % 2 == 0 else (other, one)
            )
    figures: dict[str, Any] = {}
    for mode, pairs in samples.items():
        for name in pairs[0][0]:
            figures[f"{mode}_{name}"] = round(statistics.median(m[name] for _, m in pairs), 2)
            figures[f"{mode}_reference_{name}"] = round(
                statistics.median(r[name] for r, _ in pairs), 2
            )
            ratios = [m[name] / r[name] for r, m in pairs if r[name]]
            if not ratios:
                continue
            figures[f"{mode}_{name}_over_reference"] = round(statistics.median(ratios), 3)
            if len(ratios) >= 4:
                quartiles = statistics.quantiles(ratios, n=4)
                figures[f"{mode}_{name}_quartiles"] = [
                    round(quartiles[0], 3),
                    round(quartiles[2], 3),
                ]
    return figures
