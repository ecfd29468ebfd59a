"""A node holding many distributed load balancers (issue 34): programming and per-flow cost.

    python bench/l4_node_scale.py [--quick] [--sizes 1,1000,10000] [--seconds S] [--rounds R]

In the L4 end-to-end test's lab (client, balancer and two backends in namespaces this run
creates), the balancer namespace holds one load balancer on the lab's VIP, with the two
HAProxy backends as members, and the engine then holds more and more load balancers
beside it (other VIPs, two members each, tables of 1,021 slots as the distributed provider
sizes them for small pools). At each size, JSON:

- ``load_s``: the extra load balancers loaded by one engine's ``apply_many`` (full loads,
  ``FULL_LOADS_PER_TRANSACTION`` per transaction: what an agent's restore does);
- ``one_more_ms``: ``apply`` of one more load balancer, median of 10 (``one_more_cpu_ms``:
  the CPU this process and its children spent on it, kernel included, which the other
  engineers' runs on the machine inflate less than the wall time);
- ``slot_update_ms``: one member of the VIP's load balancer marked down (a slot update),
  median of 5 (back up between tries), and ``remove_ms``: removing a load balancer, median
  of 5: both as the engine sends them (netlink steps, ``LibNftOps.load_steps``), each
  try alternated with one as text through libnftables (``slot_update_text_ms``,
  ``remove_text_ms``: the path before), so before and after share the machine's load;
- ``counters_ms``: every load balancer's flow counters in one listing, median of 3;
- ``restarted_remove_ms``: a restarted engine's first removal (it reads what the kernel
  holds first, to learn what it did not load itself);
- packets (``bench/l4_node_packets.py``; with ``--quick`` only at the last size, one
  round): a second lab whose balancer holds only the VIP's load balancer is the
  reference; ``--rounds`` pairs of wrk bursts of ``--seconds`` alternate between the two,
  for new connections and keep-alive requests; requests/s and CPU per request (wrk and
  the backends, the kernel's forwarding included), and the medians of each round's ratio
  to the reference (``*_over_reference``: the issue's target is within 10 % at 10,000).

The engines program through ``LibNftOps`` (one libnftables context per namespace, as the
node agent); ``--nft-binary`` runs an ``nft`` process per command instead (``RealNftOps``,
the layout's first figures). Root only (namespaces and nftables). ``--quick``: sizes 1 and 20 (the smoke test). The machine's load average is printed before and after; nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "e2e" / "l4"))

import l4_node_packets  # noqa: E402
from l4_cidrs import start_backends  # noqa: E402
from l4_lab import VIP, L4Lab  # noqa: E402

from lbaas.l4.engine import L4Engine  # noqa: E402
from lbaas.l4.host.base import NftOps  # noqa: E402
from lbaas.l4.host.lib_ops import LibNftOps  # noqa: E402
from lbaas.l4.host.real import RealNftOps  # noqa: E402
from lbaas.l4.nft_steps import Step  # noqa: E402
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service  # noqa: E402

LB_ID = "c0de0000-0000-4000-8000-00000000c0de"
TABLE_SIZE = 1021  # lbaas.providers.distributed.translate.table_size_for a small pool


#: Slots of the extra load balancers' tables (``--other-slots``): the VIP's keeps
#: ``TABLE_SIZE``. Fewer loads the node much faster, and leaves a new flow's path (the
#: dispatch map, its chain, the VIP's own slot map) as it is.
OTHER_SLOTS = {"size": TABLE_SIZE}


def other(index: int) -> L4Service:
    """The index-th extra load balancer: its own VIP (10.210.0.0/15), two members."""
    members = tuple(L4Member(f"x{index}-{k}", f"10.212.{index % 250}.{k}", 8080) for k in (1, 2))
    lb_id = str(uuid.UUID(hex=f"{index + 1:012x}40008000{0:012x}"))
    vip = f"10.{210 + index // 62500}.{index // 250 % 250}.{index % 250 + 1}"
    listener = L4Listener(L4Protocol.TCP, 80, members, table_size=OTHER_SLOTS["size"])
    return L4Service(lb_id, vip, (listener,))


def vip_service(members: tuple[L4Member, ...]) -> L4Service:
    listener = L4Listener(L4Protocol.TCP, 80, members, table_size=TABLE_SIZE)
    return L4Service(LB_ID, VIP, (listener,))


def median_ms(action: Callable[[int], object], times: int) -> float:
    return timed_ms(action, times)[0]


def _cpu_s() -> float:
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))  # fmt: skip
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed_ms(action: Callable[[int], object], times: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds of ``times`` runs of ``action``."""
    wall, cpu = [], []
    for attempt in range(times):
        start, cpu_start = time.perf_counter(), _cpu_s()
        action(attempt)
        wall.append(time.perf_counter() - start)
        cpu.append(_cpu_s() - cpu_start)
    return round(statistics.median(wall) * 1000, 1), round(statistics.median(cpu) * 1000, 1)


class SwitchedOps(LibNftOps):
    """LibNftOps whose slot updates and removals go as text while ``text_only`` is set:
    the path before they went as netlink steps, for a before/after in one run."""

    text_only = False

    def load_steps(self, ruleset: str, steps: Sequence[Step]) -> None:
        if self.text_only:
            self.load(ruleset)
        else:
            super().load_steps(ruleset, steps)


def nft_ops(namespace: str, binary: bool) -> NftOps:
    return RealNftOps(namespace) if binary else SwitchedOps(namespace)


def alternated(ops: NftOps, action: Callable[[int], object], times: int) -> list[float]:
    """Median wall and CPU ms of ``action`` as steps and as text (``SwitchedOps``),
    ``times`` each, alternating, so both see the same load: [steps, text, steps CPU, text
    CPU] (CPU: this process's and its children's, kernel included)."""
    runs: list[list[float]] = [[], [], [], []]
    for attempt in range(2 * times):
        as_text = attempt % 2
        if isinstance(ops, SwitchedOps):
            ops.text_only = bool(as_text)
        start, cpu_start = time.perf_counter(), _cpu_s()
        action(attempt)
        runs[as_text].append(time.perf_counter() - start)
        runs[2 + as_text].append(_cpu_s() - cpu_start)
    if isinstance(ops, SwitchedOps):
        ops.text_only = False
    return [round(statistics.median(values) * 1000, 1) for values in runs]


def close(ops: NftOps) -> None:
    if isinstance(ops, LibNftOps):
        ops.close()


def programming(
    namespace: str,
    engine: L4Engine,
    ops: NftOps,
    members: tuple[L4Member, ...],
    held: int,
    binary: bool,
) -> dict[str, Any]:
    """What programming costs with ``held`` load balancers in the namespace."""
    # A restarted engine first reads what the kernel holds (then removes nothing here).
    restarted_ops = nft_ops(namespace, binary)
    restarted = L4Engine(restarted_ops)
    row: dict[str, Any] = {
        "restarted_remove_ms": median_ms(lambda _: restarted.remove(str(uuid.uuid4())), 1)
    }
    close(restarted_ops)
    row["one_more_ms"], row["one_more_cpu_ms"] = timed_ms(
        lambda n: engine.apply(other(held + n)), 10
    )
    down = (replace(members[0], healthy=False), *members[1:])

    def flip(_attempt: int) -> None:
        engine.apply(vip_service(down))
        engine.apply(vip_service(members))

    flips = [value / 2 for value in alternated(ops, flip, 5)]
    removals = alternated(ops, lambda n: engine.remove(other(held + n).lb_id), 5)
    for name, figures in (("slot_update", flips), ("remove", removals)):
        for suffix, value in zip(
            ("_ms", "_text_ms", "_cpu_ms", "_text_cpu_ms"), figures, strict=True
        ):
            row[name + suffix] = round(value, 1)
    ids = [LB_ID, *(other(n).lb_id for n in range(held))]
    row["counters_ms"] = median_ms(lambda _: engine.new_flows_of(ids), 3)
    return row


def backend_pids(lab: Any) -> list[int]:
    """The HAProxy backends' pids (``start_backends`` appends them last)."""
    return [process.pid for process in lab.processes[-lab.backends :]]


def reference_lab(directory: Path) -> tuple[Any, NftOps, list[int]]:
    """A second lab whose balancer holds only the VIP's load balancer."""
    lab = L4Lab(backends=2)
    lab.build()
    members = start_backends(lab, directory)
    ops = LibNftOps(lab.lb)
    L4Engine(ops).apply(vip_service(members))
    return lab, ops, backend_pids(lab)


def measure(
    sizes: list[int], seconds: float, rounds: int, quick: bool, binary: bool
) -> dict[str, Any]:
    load_before = os.getloadavg()
    lab = L4Lab(backends=2)
    scratch = tempfile.TemporaryDirectory(prefix="l4-node-scale-")
    rows: list[dict[str, Any]] = []
    reference: tuple[Any, NftOps, list[int]] | None = None
    try:
        lab.build()
        members = start_backends(lab, Path(scratch.name))
        pids = backend_pids(lab)
        reference = reference_lab(Path(scratch.name))
        ops = nft_ops(lab.lb, binary)
        engine = L4Engine(ops)
        engine.apply(vip_service(members))
        held = 0
        for size in sizes:
            start = time.perf_counter()
            loaded = engine.apply_many(other(n) for n in range(held, size - 1))
            failed = [lb for lb, outcome in loaded.items() if not hasattr(outcome, "full_reload")]
            if failed:
                raise RuntimeError(f"{len(failed)} load balancers not loaded: {loaded[failed[0]]}")
            row: dict[str, Any] = {
                "load_balancers": size,
                "load_s": round(time.perf_counter() - start, 1),
            }
            held = max(size - 1, 0)
            row.update(programming(lab.lb, engine, ops, members, held, binary))
            if rounds and (not quick or size == sizes[-1]):
                pair = ((reference[0], reference[2]), (lab, pids))
                perf = not quick and l4_node_packets.have_perf()
                row.update(l4_node_packets.compare(*pair, seconds, rounds, perf))
            row["load_average"] = [round(value, 2) for value in os.getloadavg()]
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        if "ops" in locals():
            close(ops)
        if reference is not None:
            close(reference[1])
            reference[0].close()
        lab.close()
        scratch.cleanup()
    return {
        "rows": rows,
        "table_size": TABLE_SIZE,
        "other_table_size": OTHER_SLOTS["size"],
        "seconds_per_run": seconds,
        "rounds": rounds,
        "nft": "binary" if binary else "libnftables",
        "load_average_before": [round(value, 2) for value in load_before],
        "load_average_after": [round(value, 2) for value in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default="1,1000,10000")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--nft-binary", action="store_true", help="an nft process a command")
    parser.add_argument("--other-slots", type=int, default=TABLE_SIZE, help="their table size")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/l4_node_scale.py needs root (network namespaces, nftables)")
    sizes = [1, 20] if args.quick else sorted({int(size) for size in args.sizes.split(",")})
    rounds = 1 if args.quick else args.rounds
    OTHER_SLOTS["size"] = args.other_slots
    print(json.dumps(measure(sizes, args.seconds, rounds, args.quick, args.nft_binary), indent=2))


if __name__ == "__main__":
    main()
