"""An agent restarted on a node holding many distributed load balancers (issue 34).

    python bench/l4_node_restart.py [--quick] [--sizes 1000,10000] [--slots 1021]
        [--entry-every 3] [--drifted 3] [--tree PATH] [--trace-memory]

Per size, in a network namespace this run creates and deletes, with a state directory of
its own: the spec files a node agent stores (``<state>/l4/<lb>.json``) for N distributed
load balancers (one TCP listener, two members, ``--slots``-slot tables as the distributed
provider gives small pools; every ``--entry-every``-th one has this node as its entry, as
one node of three would), then two processes, each the agent's own node manager
(``agent_service.l4_node_manager``, libnftables, the VIP holder) run in the namespace:

- ``cold``: restores the specs into the empty namespace (a node after a reboot), reports,
  and is SIGKILLed, its tables left in the kernel;
- then ``--drifted`` load balancers are changed behind its back (slot 0 of one's map
  deleted, another's map given a wrong member in slot 1, a third's chain flushed), which
  the restart must put right (``drift_fixed``);
- ``restart``: restores the same specs with the kernel holding them (the lab's SIGKILLed
  agent), reports, and is SIGKILLed.

Each process reports ``restore_s`` (``L4NodeManager.restore``), ``ready_s`` (exec to
restored: interpreter, imports and restore), ``cpu_s`` (user + system of the process, its
libnftables thread and kernel time included), ``peak_rss_mb`` (``ru_maxrss``) and
``rss_mb`` (VmRSS once restored: what it goes on holding). ``--trace-memory``: the restart
traces Python's allocations (its times are then inflated) and lists the ten sites holding
most once restored, and the traced peak (C allocations, libnftables', are not traced);
``--profile``: the restart's restore runs under cProfile, its 15 costliest calls listed.
``--tree PATH``: the processes import lbaas from another working tree (a before/after on
the same machine, e.g. a worktree of main). Root only. Prints JSON; nothing asserts on
time. ``--quick``: 20 load balancers (the smoke test).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT = 3600.0


def lb_id(index: int) -> str:
    return str(uuid.UUID(hex=f"{index + 1:012x}40008000{0:012x}"))


def spec_json(index: int, slots: int, entry_every: int) -> bytes:
    """The index-th load balancer's spec as the agent stores it (the wire's JSON)."""
    from lbaas.wire.l4 import L4ListenerSpec, L4MemberSpec, L4ServiceSpec

    members = tuple(
        L4MemberSpec(id=f"m{index}-{k}", address=f"10.212.{index % 250}.{k}", port=8080, weight=1)
        for k in (1, 2)
    )
    listener = L4ListenerSpec(
        id=f"l{index}",
        protocol="tcp",
        port=80,
        hash_key="five_tuple",
        table_size=slots,
        members=members,
    )
    vip = f"10.{210 + index // 62500}.{index // 250 % 250}.{index % 250 + 1}"
    spec = L4ServiceSpec(
        version=1,
        loadbalancer_id=lb_id(index),
        vip=vip,
        listeners=(listener,),
        entry=index % entry_every == 0,
    )
    return spec.model_dump_json().encode()


def child(root: Path, trace: bool, profile: bool) -> None:
    """One node manager process: restore, report one JSON line, wait to be killed."""
    started = time.perf_counter()
    if trace:
        import tracemalloc

        tracemalloc.start(8)
    from lbaas.config import AgentSettings
    from lbaas.fleet.agent_service import l4_node_manager

    manager, checker = l4_node_manager(AgentSettings(), root)
    checker.start()
    profiler = cProfile.Profile() if profile else None
    begun = time.perf_counter()
    restored = manager.restore() if profiler is None else profiler.runcall(manager.restore)
    done = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    report: dict[str, Any] = {
        "restored": len(restored),
        "restore_s": round(done - begun, 2),
        "ready_s": round(done - started, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "rss_mb": round(_vm_rss_kb() / 1024, 1),
    }
    if trace:
        report.update(_traced())
    if profiler is not None:
        report["profile"] = _profiled(profiler)
    print(json.dumps(report), flush=True)
    while True:
        time.sleep(60)


def _profiled(profiler: cProfile.Profile) -> list[str]:
    """The 15 functions of most cumulative time (the libnftables thread's work shows as
    the main thread waiting in ``Future.result``)."""
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(15)
    rows = out.getvalue().splitlines()
    start = next(n for n, row in enumerate(rows) if row.lstrip().startswith("ncalls"))
    return [" ".join(row.split()) for row in rows[start:] if row.strip()]


def _vm_rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _traced() -> dict[str, Any]:
    import tracemalloc

    current, peak = tracemalloc.get_traced_memory()
    top = tracemalloc.take_snapshot().statistics("lineno")[:10]
    return {
        "traced_mb": round(current / 2**20, 1),
        "traced_peak_mb": round(peak / 2**20, 1),
        "traced_top": [f"{stat.size / 2**20:.1f} MB {stat.traceback[0]}" for stat in top],
    }


def run_child(
    namespace: str, root: Path, tree: Path, trace: bool = False, profile: bool = False
) -> dict[str, Any]:
    """Start a node manager in ``namespace``; its report, once restored; then SIGKILL it."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", str(root)]
    argv += ["--profile"] if profile else []
    env = {k: v for k, v in os.environ.items() if not k.startswith("LBAAS_")}
    env["PYTHONPATH"] = str(tree)
    proc = subprocess.Popen(
        ["ip", "netns", "exec", namespace, *argv, *(["--trace-memory"] if trace else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as waiting:
            waiting.register(proc.stdout, selectors.EVENT_READ)
            if not waiting.select(READY_TIMEOUT):
                raise SystemExit(f"no report within {READY_TIMEOUT} s")
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"node manager exited {proc.wait()} without a report")
        report: dict[str, Any] = json.loads(line)
        return report
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def nft(namespace: str, *argv: str, text: str | None = None) -> str:
    done = subprocess.run(
        ["ip", "netns", "exec", namespace, "nft", *argv],
        input=text,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return done.stdout


def drift(namespace: str, indexes: list[int]) -> None:
    """Change the kernel behind the agent's back, one way per load balancer."""
    from lbaas.l4 import nft as names

    lines = []
    for n, index in enumerate(indexes):
        table_map = f"ip {names.TABLE} {names.map_name(lb_id(index), 'tcp_80')}"
        match n % 3:
            case 0:
                lines.append(f"delete element {table_map} {{ 0 }}")
            case 1:
                lines += [
                    f"delete element {table_map} {{ 1 }}",
                    f"add element {table_map} {{ 1 : 10.99.99.99 . 9 }}",
                ]
            case _:
                lines.append(f"flush chain ip {names.TABLE} {names.chain_name(lb_id(index))}")
    nft(namespace, "-f", "-", text="\n".join(lines) + "\n")


def drift_fixed(namespace: str, indexes: list[int]) -> bool:
    """Whether each drifted load balancer is as its spec says again (its map's slots 0 and
    1 held by its members, its chain's rules back)."""
    from lbaas.l4 import nft as names

    for index in indexes:
        listing = nft(
            namespace,
            "-j",
            "list",
            "map",
            "ip",
            names.TABLE,
            names.map_name(lb_id(index), "tcp_80"),
        )
        elements = json.loads(listing)["nftables"][1]["map"].get("elem", [])
        slots = {slot: value["concat"][0] for slot, value in elements}
        if not {0, 1} <= set(slots) or not all(v.startswith("10.212.") for v in slots.values()):
            return False
    # Rules from one netlink dump (this tree's reader, whatever tree is measured): ``nft
    # list chain`` reads every map's elements first (a minute and more at 10,000).
    code = (
        "import json; from lbaas.l4.host.nft_dump import read_rule_comments; "
        "from lbaas.l4.host.nft_netlink import NetlinkSocket; "
        "print(json.dumps(read_rule_comments(NetlinkSocket(), 'lbaas')))"
    )
    done = subprocess.run(
        ["ip", "netns", "exec", namespace, sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    rules = json.loads(done.stdout)
    return all(rules.get(names.chain_name(lb_id(index))) for index in indexes)


def measure(size: int, args: argparse.Namespace) -> dict[str, Any]:
    namespace = f"lbr-{uuid.uuid4().hex[:8]}"
    scratch = tempfile.TemporaryDirectory(prefix="l4-node-restart-")
    root = Path(scratch.name) / "l4"
    row: dict[str, Any] = {"load_balancers": size, "slots": args.slots}
    try:
        subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=30)
        subprocess.run(["ip", "-n", namespace, "link", "set", "lo", "up"], check=True, timeout=30)
        root.mkdir(mode=0o700)
        for index in range(size):
            (root / f"{lb_id(index)}.json").write_bytes(
                spec_json(index, args.slots, args.entry_every)
            )
        row["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
        row["cold"] = run_child(namespace, root, args.tree)
        drifted = [size // 2 + k for k in range(min(args.drifted, size - size // 2))]
        if drifted:
            drift(namespace, drifted)
        row["restart"] = run_child(namespace, root, args.tree, args.trace_memory, args.profile)
        if drifted:
            row["drifted"] = len(drifted)
            row["drift_fixed"] = drift_fixed(namespace, drifted)
        row["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=300)
        scratch.cleanup()
    print(json.dumps(row), file=sys.stderr, flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--slots", type=int, default=1021)
    parser.add_argument("--entry-every", type=int, default=3)
    parser.add_argument("--drifted", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=ROOT, help="lbaas from this tree")
    parser.add_argument("--trace-memory", action="store_true")
    parser.add_argument("--profile", action="store_true", help="the restart under cProfile")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.trace_memory, args.profile)
        return
    if os.geteuid() != 0:
        sys.exit("bench/l4_node_restart.py needs root (network namespaces, nftables)")
    sys.path.insert(0, str(args.tree))
    sizes = [20] if args.quick else [int(size) for size in args.sizes.split(",")]
    rows = [measure(size, args) for size in sizes]
    print(json.dumps({"rows": rows, "tree": str(args.tree)}, indent=2))


if __name__ == "__main__":
    main()
