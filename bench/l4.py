"""L4 engine benchmark: Maglev tables and their nftables programming, as JSON.

    python bench/l4.py [--quick] [--size M] [--members N]

Measures, in one run:

- ``maglev``: time to build a table of M slots for N equal members (median of repeats), and
  the share of slots that move when one member is removed, beyond the removed member's
  own slots (as a fraction of the table and as a multiple of 1/N; averaged over removals
  at the start, middle and end of the key order);
- ``builds``: CPU time of the build (median, min and max of repeats) for M = 65537 with
  N = 1000 (the issue's target) and M = 16411 with N = 100 (the default size, a pool small
  enough for the Python fill);
- ``disruption_by_size``: the slots moved beyond the removed member's own, as a multiple
  of 1/N, for N members and growing M (Maglev's disruption falls as M/N grows);
- ``sizes``: for several prime table sizes, build time, ``nft -f`` time of the full table,
  and the largest deviation of a member's share from 1/N for 100 members;
- ``maglev`` also: the same for one member marked down (``build_table_with_down``: only
  its own slots should move) and the largest share deviation of the others meanwhile;
- ``tombstones``: removal as the engine does it (the removed member kept as a tombstone):
  slots moved beyond its own (should be 0), a new member taking its place, share
  deviations with 1, 10 and the most tombstones kept, and what forgetting them moves;
- ``kernel``: in a scratch network namespace it creates (root only), the time from a
  member change (marked down; removed from the pool, kept as a tombstone; removed and the
  table rebuilt without it, plain Maglev) to the new table live in the kernel:
  the engine's slot update (table rebuild, diff, one ``nft -f`` transaction) against a full
  reload (``nft -c`` then ``nft -f`` of the whole table);
- ``distributed`` (root, not with ``--quick``, not with ``--no-distributed``): the
  distributed provider for real (the end-to-end test's lab: ``lbaas serve`` and two node
  agents in namespaces, two backends): TCP requests/s and p99 from a client on node n1
  through the distributed VIP, directly to one backend, and through an amphora HAProxy
  (loopback mode, client in the control plane's namespace). With wrk and HAProxy installed
  (``bench/l4_c.py``) the client is wrk, keep-alive and ``Connection: close`` (a new flow
  through the NAT map per request), and the backends are HAProxies answering themselves;
  else one Python client (``bench/l4_client.py``) against Python backends, said in the
  JSON (``tcp_client``). UDP request/answer packets/s and p99 through the VIP and
  directly, with the Python client (no C UDP load tool is installed). ``--repeats``
  interleaved rounds of ``--seconds`` each (VIP and direct swapping places); medians, the
  ratio of medians and the median of each round's own VIP/direct ratio;
- ``allowed_cidrs`` (root; ``bench/l4_cidrs.py``; alone with ``--only-cidrs``): wrk's
  keep-alive requests/s and new connections/s through the VIP with 1, 100 and 10,000
  allowed networks against none, and each over none (``--repeats`` rounds of
  ``--seconds``); with ``--quick`` only the table's load time with 1 and 100 networks;
- ``traffic`` (root, not with ``--quick``): request/response rates of one Python client
  in a client namespace through the VIP against directly to one backend, TCP with a new
  connection per request and UDP (medians of five interleaved one-second runs); client and servers are Python on the same two cores, so
  the ratio says whether the kernel path costs anything, not what it can carry.

``--quick`` uses small sizes (the smoke test). Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lbaas.l4.engine import L4Engine  # noqa: E402
from lbaas.l4.host.real import RealNftOps  # noqa: E402
from lbaas.l4.maglev import (  # noqa: E402
    Backend,
    MaglevTable,
    build_table,
    build_table_with_down,
    clear_table_cache,
    moved_slots,
)
from lbaas.l4.service import (  # noqa: E402
    L4Listener,
    L4Member,
    L4Protocol,
    L4Service,
    Tombstone,
)
from lbaas.providers.distributed.places import max_tombstones  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import l4_c  # noqa: E402  (the C tools' half of the distributed run)
import l4_cidrs  # noqa: E402  (what allowed_cidrs costs the data plane)

LB_ID = "b3f1c2d4-0000-4000-8000-00000000l4b0"
C_BACKEND_PORT = 8080  # the HAProxy backends' port beside the Python ones' 8000
ONE_MEMBER_PORT = 81  # a second TCP listener of the VIP whose pool is b1 alone


def median_ms(
    action: Callable[[], object], repeats: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    times = []
    for _ in range(repeats):
        start = clock()
        action()
        times.append((clock() - start) * 1000)
    return round(statistics.median(times), 2)


def uncached_table(backends: list[Backend], size: int) -> MaglevTable:
    clear_table_cache()
    return build_table(backends, size)


def equal_members(count: int) -> list[Backend]:
    return [Backend(f"member-{index:04d}") for index in range(count)]


def moved_beyond_removed(backends: list[Backend], size: int) -> float:
    """Mean share of the table moved beyond the removed member's own slots (3 removals)."""
    full = build_table(backends, size)
    extra = []
    for removed in (backends[0], backends[len(backends) // 2], backends[-1]):
        after = build_table([b for b in backends if b != removed], size)
        owned = full.shares()[removed.key]
        extra.append((len(moved_slots(full, after)) - owned) / size)
    return statistics.mean(extra)


def build_cpu_figures(cases: list[tuple[int, int]], repeats: int) -> list[dict[str, Any]]:
    """CPU time of uncached builds: the machine is shared, so wall time says little."""
    rows = []
    for size, count in cases:
        backends = equal_members(count)
        times = []
        for _ in range(repeats):
            start = time.process_time()
            uncached_table(backends, size)
            times.append((time.process_time() - start) * 1000)
        rows.append(
            {
                "size": size,
                "members": count,
                "cpu_ms_median": round(statistics.median(times), 1),
                "cpu_ms_min": round(min(times), 1),
                "cpu_ms_max": round(max(times), 1),
            }
        )
    return rows


def disruption_figures(sizes: list[int], count: int) -> list[dict[str, Any]]:
    backends = equal_members(count)
    return [
        {
            "size": size,
            "members": count,
            "moved_beyond_removed_times_1_over_n": round(
                moved_beyond_removed(backends, size) * count, 2
            ),
        }
        for size in sizes
    ]


def maglev_figures(size: int, count: int, repeats: int) -> dict[str, Any]:
    backends = equal_members(count)
    build_ms = median_ms(lambda: uncached_table(backends, size), repeats)
    # CPU time of this process: the wall time also counts other work on a shared machine.
    build_cpu_ms = median_ms(lambda: uncached_table(backends, size), repeats, time.process_time)
    full = build_table(backends, size)
    beyond = moved_beyond_removed(backends, size)
    down = build_table_with_down(backends, size, {backends[count // 2].key})
    down_extra = len(moved_slots(full, down)) - full.shares()[backends[count // 2].key]
    down_shares = down.shares().values()
    return {
        "size": size,
        "members": count,
        "build_ms": build_ms,
        "build_cpu_ms": build_cpu_ms,
        "moved_beyond_removed_share": round(beyond, 5),  # plain Maglev: rebuilt without it
        "moved_beyond_removed_times_1_over_n": round(beyond * count, 2),
        "removed_member_share": round(1 / count, 5),
        "down_moved_beyond_its_share": round(down_extra / size, 5),
        "down_max_share_deviation": round(
            max(abs(share * (count - 1) / size - 1) for share in down_shares), 4
        ),
    }


def tombstone_figures(size: int, count: int) -> dict[str, Any]:
    """Removal as the engine does it: the removed member stays as a tombstone.

    Slots moved beyond the removed member's own (3 removals, as ``moved_beyond_removed``),
    a new member taking the tombstone's place (slots moved: should be the removed one's),
    the largest share deviation with one tombstone and with as many as are kept
    (``max_tombstones``), and the cost of forgetting them (compaction: slots moved).
    """
    members = members_of(count)
    full = L4Listener(L4Protocol.TCP, 80, tuple(members), table_size=size).table()
    extra, replaced = [], []
    for gone in (members[0], members[count // 2], members[-1]):
        rest = tuple(m for m in members if m != gone)
        after = L4Listener(L4Protocol.TCP, 80, rest, table_size=size,
                           tombstones=(Tombstone(gone.key),)).table()  # fmt: skip
        owned = full.shares()[gone.key]
        extra.append((len(moved_slots(full, after)) - owned) / size)
        newcomer = replace(members[0], key="newcomer", address="10.205.0.1", place=gone.key)
        back = L4Listener(L4Protocol.TCP, 80, (*rest, newcomer), table_size=size).table()
        # Keys differ (the newcomer is named by its place in the table): compare owners.
        before = [after.backends[i].key for i in after.slots]
        now = [back.backends[i].key for i in back.slots]
        replaced.append(sum(a != b for a, b in zip(before, now, strict=True)) / owned)
    kept = max_tombstones(count - max_tombstones(count))
    rows: dict[str, Any] = {
        "size": size,
        "members": count,
        "moved_beyond_removed_times_1_over_n": round(statistics.mean(extra) * count, 2),
        "replacement_moved_over_removed_share": round(statistics.mean(replaced), 3),
    }
    for graves in (1, 10, kept):
        live = tuple(members[graves:])
        dead = tuple(Tombstone(m.key) for m in members[:graves])
        with_graves = L4Listener(L4Protocol.TCP, 80, live, table_size=size, tombstones=dead)
        table = with_graves.table()
        plain = L4Listener(L4Protocol.TCP, 80, live, table_size=size).table()
        rows[f"tombstones_{graves}"] = {
            "max_share_deviation": round(
                max(abs(share * len(live) / size - 1) for share in table.shares().values()), 4
            ),
            "plain_table_max_share_deviation": round(
                max(abs(share * len(live) / size - 1) for share in plain.shares().values()), 4
            ),
            "compaction_moved_times_1_over_n": round(
                len(moved_slots(table, plain)) / size * count, 2
            ),
        }
    return rows


def share_deviation(size: int, count: int) -> float:
    """Largest |share - 1/N| / (1/N) over the members of a table."""
    shares = build_table([Backend(f"m{index}") for index in range(count)], size).shares()
    return round(max(abs(share * count / size - 1) for share in shares.values()), 4)


def service(
    members: list[L4Member], size: int, tombstones: tuple[Tombstone, ...] = ()
) -> L4Service:
    listener = L4Listener(
        L4Protocol.TCP, 80, tuple(members), table_size=size, tombstones=tombstones
    )
    return L4Service(LB_ID, "10.203.9.1", (listener,))


def members_of(count: int) -> list[L4Member]:
    return [
        L4Member(f"member-{i:04d}", f"10.204.{i // 250}.{i % 250 + 1}", 8080) for i in range(count)
    ]


class ScratchNamespace:
    """A namespace of this run's own, deleted on exit; nftables there touch nothing else."""

    def __init__(self) -> None:
        self.name = f"l4b-{uuid.uuid4().hex[:6]}"

    def __enter__(self) -> ScratchNamespace:
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        return self

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["ip", "netns", "delete", self.name], check=False)


def size_figures(sizes: list[int], count: int, namespace: str | None) -> list[dict[str, Any]]:
    """Per table size, with ``count`` members: build, share deviation (100), full load."""
    rows = []
    for size in sizes:
        row: dict[str, Any] = {
            "size": size,
            "members": count,
            "build_ms": median_ms(
                lambda s=size: uncached_table([Backend(f"m{i}") for i in range(count)], s), 3
            ),
            "share_deviation_100_members": share_deviation(size, min(100, size)),
        }
        if namespace is not None:
            engine = L4Engine(RealNftOps(namespace))
            row["full_load_ms"] = median_ms(
                lambda s=size, e=engine: e.apply(service(members_of(count), s)), 1
            )
            engine.remove(LB_ID)
        rows.append(row)
    return rows


def kernel_figures(size: int, count: int, namespace: str, repeats: int) -> dict[str, Any]:
    """Member change -> new table live: slot updates (down, removed) against a full reload."""
    members = members_of(count)
    ops = RealNftOps(namespace)
    timings: dict[str, list[float]] = {"down": [], "removed": [], "rebuilt": [], "full": []}
    moved: dict[str, list[int]] = {"down": [], "removed": [], "rebuilt": []}
    for round_ in range(repeats):
        changed = members[(round_ * 7) % count]
        rest = [m for m in members if m != changed]
        variants = {
            "down": service(
                [replace(m, healthy=False) if m == changed else m for m in members], size
            ),  # fmt: skip
            # As the distributed provider removes: the member stays as a tombstone.
            "removed": service(rest, size, (Tombstone(changed.key),)),
            # Plain Maglev: the table rebuilt without it (what compaction pays).
            "rebuilt": service(rest, size),
        }
        for kind, after in variants.items():
            clear_table_cache()  # only the table applied before is known, as in service
            engine = L4Engine(ops)
            engine.apply(service(members, size))
            start = time.perf_counter()
            report = engine.apply(after)
            timings[kind].append((time.perf_counter() - start) * 1000)
            moved[kind].append(report.moved_slots)
        clear_table_cache()  # as after a restart: nothing known, nothing cached
        start = time.perf_counter()
        L4Engine(ops).apply(service(members, size))  # a new engine knows nothing: full reload
        timings["full"].append((time.perf_counter() - start) * 1000)
        L4Engine(ops).remove(LB_ID)
    return {
        "size": size,
        "members": count,
        "member_down_update_ms": round(statistics.median(timings["down"]), 1),
        "member_down_slots_rewritten": int(statistics.median(moved["down"])),
        "member_removed_update_ms": round(statistics.median(timings["removed"]), 1),
        "member_removed_slots_rewritten": int(statistics.median(moved["removed"])),
        "member_removed_plain_rebuild_update_ms": round(statistics.median(timings["rebuilt"]), 1),
        "member_removed_plain_rebuild_slots_rewritten": int(statistics.median(moved["rebuilt"])),
        "full_reload_ms": round(statistics.median(timings["full"]), 1),
    }


def traffic_figures(seconds: float) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests" / "e2e" / "l4"))
    from l4_lab import VIP, L4Lab  # the test lab: client, balancer, backends

    lab = L4Lab(backends=2)
    try:
        lab.build()
        L4Engine(RealNftOps(lab.lb)).apply(
            L4Service(
                LB_ID,
                VIP,
                (
                    L4Listener(L4Protocol.TCP, 80, lab.members(), table_size=251),
                    L4Listener(L4Protocol.UDP, 80, lab.members(), table_size=251),
                ),
            )
        )
        direct = lab.members()[0]
        targets = {"vip": (VIP, 80), "direct": (direct.address, direct.port)}
        samples: dict[str, list[float]] = {}
        # Interleaved short runs, so that drift in the machine's load hits both alike.
        for _ in range(5):
            for protocol in ("tcp", "udp"):
                for name, (address, port) in targets.items():
                    rate = lab.rate(protocol, address, port, seconds)
                    samples.setdefault(f"{protocol}_{name}", []).append(rate)
    finally:
        lab.close()
    medians = {key: round(statistics.median(values)) for key, values in samples.items()}
    rates: dict[str, float] = {
        "tcp_new_connection_per_s_vip": medians["tcp_vip"],
        "tcp_new_connection_per_s_direct": medians["tcp_direct"],
        "udp_request_per_s_vip": medians["udp_vip"],
        "udp_request_per_s_direct": medians["udp_direct"],
    }
    rates["tcp_vip_over_direct"] = round(
        rates["tcp_new_connection_per_s_vip"] / rates["tcp_new_connection_per_s_direct"], 3
    )
    rates["udp_vip_over_direct"] = round(
        rates["udp_request_per_s_vip"] / rates["udp_request_per_s_direct"], 3
    )
    return rates


def distributed_figures(seconds: float, repeats: int) -> dict[str, Any]:
    """Rates and p99 through a distributed VIP, directly and through an amphora HAProxy.

    TCP with C tools when installed (``bench/l4_c.py``): wrk from node n1 (keep-alive, and
    ``Connection: close`` so that every request is a new flow through the NAT map) against
    HAProxy backends answering themselves; else one Python client against the Python
    backends (``bench/l4_client.py``). UDP: the Python client (no C UDP tool installed).
    """
    sys.path.insert(0, str(ROOT / "tests" / "e2e" / "l4"))
    from dist_lab import BACKEND_PORT, NODES, DistLab

    c_tools = l4_c.have_c_tools()
    lab = DistLab(backends=2)
    samples: dict[str, list[dict[str, float]]] = {}
    try:
        lab.build()
        tcp_port = BACKEND_PORT
        if c_tools:
            tcp_port = C_BACKEND_PORT
            for index in range(1, lab.backends + 1):
                role = f"b{index}"
                config = l4_c.write_backend_config(lab.state, role, lab.address(role), tcp_port)
                lab.start_process(f"h{role}", role, l4_c.backend_argv(config))
                l4_c.wait_listening(("ip", "netns", "exec", lab.ns(role)), lab.address(role),
                                    tcp_port)  # fmt: skip
        for node in NODES:
            lab.start_agent(node)
        lab.start_control_plane()
        vips = _distributed_and_amphora(lab, tcp_port)
        direct = lab.address("b1")
        paths = {
            "vip": ("n1", vips["distributed"], 80),
            "vip_one_member": ("n1", vips["distributed"], ONE_MEMBER_PORT),
            "direct": ("n1", direct, tcp_port),
            "amphora": ("ctl", vips["amphora"], 80),
        }
        client = str(ROOT / "bench" / "l4_client.py")

        def python_run(role: str, protocol: str, address: str, port: int) -> dict[str, float]:
            out = lab.in_ns(role, sys.executable, client, protocol, address, str(port),
                            str(seconds))  # fmt: skip
            figures: dict[str, float] = json.loads(out)
            return figures

        for round_ in range(repeats):  # interleaved: drift in the load hits all paths alike
            # VIP and direct swap places each round, so neither always runs first.
            order = ["vip", "direct"] if round_ % 2 == 0 else ["direct", "vip"]
            tcp_order = ["vip_one_member", *order] if round_ % 2 else [*order, "vip_one_member"]
            for name in [*tcp_order, "amphora"]:
                role, address, port = paths[name]
                if c_tools:
                    prefix = ("ip", "netns", "exec", lab.ns(role))
                    for mode, keepalive in (("keepalive", True), ("close", False)):
                        run = l4_c.wrk_run(prefix, address, port, seconds, keepalive)
                        samples.setdefault(f"{mode}_{name}", []).append(run)
                else:
                    run = python_run(role, "tcp", address, port)
                    samples.setdefault(f"tcp_{name}", []).append(run)
            for name in order:
                role, address, _ = paths[name]
                port = BACKEND_PORT if name == "direct" else 80
                samples.setdefault(f"udp_{name}", []).append(python_run(role, "udp", address, port))
    finally:
        lab.close()
    figures: dict[str, Any] = {"repeats": repeats, "seconds_per_run": seconds}
    if c_tools:
        figures |= l4_c.describe()
    else:
        figures["tcp_client"] = (
            "python bench/l4_client.py, one client, a new connection per request (fallback: "
            "wrk or haproxy not installed)"
        )
        figures["tcp_backend"] = "python tests/e2e/l4/l4_peers.py"
    figures["udp_client"] = (
        "python bench/l4_client.py, one socket, request/answer (no C UDP load tool installed; "
        "iperf3 would be one)"
    )
    figures |= l4_c.summarize(samples)
    return figures


def _distributed_and_amphora(lab: Any, tcp_port: int) -> dict[str, str]:
    """A distributed and an amphora load balancer on the lab's backends; their VIPs.

    TCP pools' members listen on ``tcp_port`` (the C backends when they run), UDP pools'
    on the Python backends' 8000.
    """

    def pool(protocol: str, algorithm: str, backends: int = lab.backends) -> dict[str, Any]:
        port = tcp_port if protocol == "TCP" else 8000
        members = [
            {"address": lab.address(f"b{i}"), "protocol_port": port, "subnet_id": lab.subnet_id}
            for i in range(1, backends + 1)
        ]
        return {"name": f"{protocol}-{algorithm}-{backends}", "protocol": protocol,
                "lb_algorithm": algorithm, "members": members}  # fmt: skip

    bodies = {
        "distributed": {"provider": "distributed", "vip_subnet_id": lab.subnet_id,
                        "vip_address": lab.address("vip"), "listeners": [
                            {"protocol": "TCP", "protocol_port": 80,
                             "default_pool": pool("TCP", "SOURCE_IP_PORT")},
                            # b1 alone: the same backend as "direct", only the path differs.
                            {"protocol": "TCP", "protocol_port": ONE_MEMBER_PORT,
                             "default_pool": pool("TCP", "SOURCE_IP_PORT", 1)},
                            {"protocol": "UDP", "protocol_port": 80,
                             "default_pool": pool("UDP", "SOURCE_IP_PORT")}]},
        "amphora": {"provider": "amphora",
                    "vip_subnet_id": "7f000a00-0000-4000-8000-000000000001",
                    "listeners": [{"protocol": "TCP", "protocol_port": 80,
                                   "default_pool": pool("TCP", "ROUND_ROBIN")}]},
    }  # fmt: skip
    vips: dict[str, str] = {}
    for name, body in bodies.items():
        status, made = lab.call("POST", "/v2/lbaas/loadbalancers", {"loadbalancer": body})
        if status != 201:
            raise RuntimeError(f"{name} load balancer not created: {status} {made}")
        lb = made["loadbalancer"]
        deadline = time.monotonic() + 120
        while (state := _provisioning(lab, lb["id"])) != "ACTIVE":
            if state == "ERROR" or time.monotonic() > deadline:
                raise RuntimeError(f"{name} load balancer {state}:\n{lab.log('ctl')}")
            time.sleep(0.3)
        vips[name] = lb["vip_address"]
    return vips


def _provisioning(lab: Any, lb_id: str) -> str:
    status: str = lab.call("GET", f"/v2/lbaas/loadbalancers/{lb_id}")[1]["loadbalancer"][
        "provisioning_status"
    ]
    return status


def cidr_figures(seconds: float, rounds: int) -> dict[str, Any]:
    """The allowed_cidrs rows (``bench/l4_cidrs.py``): wrk and HAProxy needed."""
    if not l4_c.have_c_tools():
        return {"skipped": "wrk or haproxy not installed"}
    sys.path.insert(0, str(ROOT / "tests" / "e2e" / "l4"))
    return l4_cidrs.traffic_figures(seconds, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--size", type=int, default=65537)
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=2.0, help="each traffic run")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved provider rounds")
    parser.add_argument("--no-distributed", action="store_true", help="skip the provider run")
    parser.add_argument("--only-distributed", action="store_true", help="only the provider run")
    parser.add_argument("--only-cidrs", action="store_true", help="only the allowed_cidrs rows")
    args = parser.parse_args()
    size, count = (1009, 50) if args.quick else (args.size, args.members)
    repeats = 1 if args.quick else 7
    root = os.geteuid() == 0
    sizes = [251, 1009] if args.quick else [4099, 16411, 65537, 131071]
    if args.only_cidrs:
        json.dump({"allowed_cidrs": cidr_figures(args.seconds, args.repeats)}, sys.stdout, indent=2)
        print()
        return
    if args.only_distributed:
        json.dump(
            {"distributed": distributed_figures(args.seconds, args.repeats)}, sys.stdout, indent=2
        )
        print()
        return
    figures: dict[str, Any] = {"maglev": maglev_figures(size, count, repeats)}
    figures["tombstones"] = tombstone_figures(size, count)
    build_cases = [(1009, 50), (1009, 600)] if args.quick else [(65537, 1000), (16411, 100)]
    figures["builds"] = build_cpu_figures(build_cases, repeats)
    disruption_sizes = [1009, 2003] if args.quick else [65537, 131071, 262139]
    figures["disruption_by_size"] = disruption_figures(disruption_sizes, count)
    if not root:
        figures["sizes"] = size_figures(sizes, min(count, 1000), None)
        figures["kernel"] = "needs root"
    else:
        with ScratchNamespace() as scratch:
            figures["sizes"] = size_figures(sizes, min(count, 1000), scratch.name)
            figures["kernel"] = kernel_figures(size, count, scratch.name, 1 if args.quick else 5)
            if args.quick:
                figures["allowed_cidrs"] = {"loads": l4_cidrs.load_figures(scratch.name)}
        if not args.quick:
            figures["traffic"] = traffic_figures(1.0)
            figures["allowed_cidrs"] = cidr_figures(args.seconds, args.repeats)
            if not args.no_distributed:
                figures["distributed"] = distributed_figures(args.seconds, args.repeats)
    json.dump(figures, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
