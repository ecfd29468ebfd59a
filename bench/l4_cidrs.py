"""What a listener's ``allowed_cidrs`` costs the L4 data plane (issue 32), for ``bench/l4.py``.

The engine filters a listener's sources with one nftables interval set per listener and
one ``ip saddr != @set drop`` rule ahead of Maglev. A set lookup should cost the same
whatever the set's size, so the question is only whether 1, 100 or 10,000 networks
change what the VIP carries. Measured in the L4 end-to-end test's lab (client, balancer
and two backends in namespaces this run creates, unique names), the backends HAProxies
answering themselves and the client wrk: a keep-alive run (throughput, the filter only on
each flow's first packet) and a ``Connection: close`` run (new connections per second,
the filter on every SYN), for each number of networks and none, in interleaved rounds
that rotate the order, so drift in the machine's load hits every row alike. The networks
are disjoint /30s, so the set keeps every one as its own interval, plus the client's
/24 last in the list. The load average is recorded before and after.

``--quick`` (the smoke test) sends no traffic: it only loads the table with 1 and 100
networks in a scratch namespace and times that. Used by ``bench/l4.py``; not a library.
"""

from __future__ import annotations

import ipaddress
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import l4_c

from lbaas.l4.engine import L4Engine
from lbaas.l4.host.real import RealNftOps
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service

LB_ID = "b3f1c2d4-0000-4000-8000-00000000c1d4"
SIZES = (0, 1, 100, 10000)
CLIENT_NETWORK = "10.201.0.0/24"  # the L4 lab's client namespace
HTTP_PORT = 8080


def networks(count: int) -> tuple[str, ...]:
    """``count`` networks of which only the last admits the lab's client (none: empty)."""
    if count == 0:
        return ()
    base = int(ipaddress.IPv4Address("100.64.0.0"))
    others = [f"{ipaddress.IPv4Address(base + index * 8)}/30" for index in range(count - 1)]
    return (*others, CLIENT_NETWORK)


def _service(vip: str, members: tuple[L4Member, ...], count: int) -> L4Service:
    listener = L4Listener(
        L4Protocol.TCP, 80, members, table_size=251, allowed_cidrs=networks(count)
    )
    return L4Service(LB_ID, vip, (listener,))


def load_figures(namespace: str) -> list[dict[str, Any]]:
    """The quick rows: a full table load with 1 and 100 networks (no traffic)."""
    members = (L4Member("m1", "10.204.0.1", HTTP_PORT), L4Member("m2", "10.204.0.2", HTTP_PORT))
    rows = []
    for count in (1, 100):
        engine = L4Engine(RealNftOps(namespace))
        start = time.perf_counter()
        engine.apply(_service("10.203.9.1", members, count))
        rows.append(
            {"allowed_cidrs": count, "load_ms": round((time.perf_counter() - start) * 1000, 1)}
        )
        engine.remove(LB_ID)
    return rows


def start_backends(lab: Any, directory: Path) -> tuple[L4Member, ...]:
    """An HAProxy answering itself in each backend namespace (killed by ``lab.close``)."""
    members = []
    for index in range(1, lab.backends + 1):
        address = f"10.202.{index}.2"
        config = l4_c.write_backend_config(directory, f"b{index}", address, HTTP_PORT)
        argv = ["ip", "netns", "exec", lab.backend(index), *l4_c.backend_argv(config)]
        quiet = subprocess.DEVNULL
        lab.processes.append(subprocess.Popen(argv, stdout=quiet, stderr=quiet, text=True))
        l4_c.wait_listening(("ip", "netns", "exec", lab.client), address, HTTP_PORT)
        members.append(L4Member(f"b{index}", address, HTTP_PORT))
    return tuple(members)


def traffic_figures(seconds: float, rounds: int) -> dict[str, Any]:
    """Keep-alive requests/s and new connections/s through the VIP per number of networks,
    medians of ``rounds`` interleaved rounds, and each row over the unfiltered one."""
    from l4_lab import VIP, L4Lab  # tests/e2e/l4, put on the path by bench/l4.py

    load_before = os.getloadavg()
    lab = L4Lab(backends=2)
    samples: dict[str, list[float]] = {}
    scratch = tempfile.TemporaryDirectory(prefix="l4-cidrs-")
    try:
        lab.build()
        members = start_backends(lab, Path(scratch.name))
        engine = L4Engine(RealNftOps(lab.lb))
        prefix = ("ip", "netns", "exec", lab.client)
        for round_ in range(rounds):
            shift = round_ % len(SIZES)
            for count in SIZES[shift:] + SIZES[:shift]:
                engine.apply(_service(VIP, members, count))
                for mode, keepalive in (("keepalive", True), ("new_connection", False)):
                    run = l4_c.wrk_run(prefix, VIP, 80, seconds, keepalive)
                    if run["errors"]:
                        raise RuntimeError(f"{count} networks, {mode}: wrk errors {run}")
                    samples.setdefault(f"{mode}_{count}", []).append(run["per_s"])
    finally:
        lab.close()
        scratch.cleanup()
    return _summary(samples, seconds, rounds, load_before)


def _summary(
    samples: dict[str, list[float]], seconds: float, rounds: int, load_before: tuple[float, ...]
) -> dict[str, Any]:
    rows = []
    for count in SIZES:
        row: dict[str, Any] = {"allowed_cidrs": count}
        for mode in ("keepalive", "new_connection"):
            median = statistics.median(samples[f"{mode}_{count}"])
            none = statistics.median(samples[f"{mode}_0"])
            row[f"{mode}_per_s"] = round(median)
            row[f"{mode}_over_none"] = round(median / none, 3)
            # Each round's own ratio (a round's runs share the load of that moment).
            paired = [
                value / base
                for value, base in zip(
                    samples[f"{mode}_{count}"], samples[f"{mode}_0"], strict=True
                )
            ]
            row[f"{mode}_over_none_paired_median"] = round(statistics.median(paired), 3)
            row[f"{mode}_over_none_paired_range"] = [round(min(paired), 3), round(max(paired), 3)]
        rows.append(row)
    return {
        "rows": rows,
        "seconds_per_run": seconds,
        "rounds": rounds,
        "client": l4_c.describe()["tcp_client"],
        "load_average_before": [round(value, 2) for value in load_before],
        "load_average_after": [round(value, 2) for value in os.getloadavg()],
    }
