"""L4 tier benchmark: how fast the router stops sending a VIP to a node that died, as JSON.

    python bench/l4_tier.py [--quick] [--trials N] [--no-bfd]

Builds the tier of tests/e2e/tier (a lab: router and three L4 nodes running BIRD, the VIP
announced by all three, three backends, a client; root only) and, per trial, takes one node
out (nodes in turn) in one of two ways:

- ``host_down``: ``Lab.host_down`` — the node lost at one instant (its BIRD frozen, its
  links cut, then SIGKILLed): it says nothing, so BFD (or the hold timer) must notice;
- ``link_loss``: ``Lab.partition`` — its links go down while its BIRD runs on, so only BFD
  (or, with ``--no-bfd``, the BGP hold timer of 3 s) can notice.

It reports the time from the first action to the moment the router's kernel route for the
VIP no longer lists the node (polled every 20 ms), p50 and max over the trials, and the
new connections a client opened meanwhile (one after another, 0.5 s timeout each, from the
moment before the node died until shortly after its withdrawal) that failed. After each
trial the node comes back (links up, BIRD restarted) and the next trial waits for its route.
Last, ``survival``, once per return mode: the client holds ``--held`` established
connections (200), one node is lost (``host_down``), and each connection is asked for an
answer: how many survive, and how many had gone through the dead node. ``nat``: the L4
engine's DNAT plus masquerade (the node's conntrack holds each flow); ``dsr``: direct server
return (marks and policy routing, ``notrack``: no per-flow state on any node).
Then ``group_grow_shrink``: the DSR VIP's group grows by a node and shrinks back while a
client opens new connections and holds ``--held`` others (see ``_group_change``).
Then ``group_move``, per return mode: the VIP placed in group a (h1, h2) is moved to group b
(h3) while a client opens new connections and holds ``--held`` others; make before break:
b's node announces it first, then a's nodes withdraw (``_group_move``).
First of all (before the client has made tens of thousands of connections whose ports
collide with the members' TIME_WAIT entries), ``dsr_connections_per_s``: new TCP
connections/s to the DSR VIP with its group at 1, 2 and 3 nodes (two client processes; on this two-core machine the client and the members, not
the nodes, bound it).
``--quick`` runs one trial of each and holds 30 (the smoke test). Nothing here asserts on
time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "e2e" / "tier"))

from tier_lab import NODES, PEERS, PORT, TierLab, tier_lab  # noqa: E402

from lbaas.tier.groups import TierGroups  # noqa: E402

PROBE = str(ROOT / "tests" / "e2e" / "tier" / "tier_probe.py")
HOLD = str(ROOT / "tests" / "e2e" / "tier" / "tier_hold.py")
_PROBE_TIMEOUT = 0.5
_WAIT = 30.0


def _probe(tier: TierLab, seconds: float, vip: str | None = None) -> subprocess.Popen[str]:
    argv = ["ip", "netns", "exec", tier.lab.names.client, sys.executable, PROBE]
    argv += [vip or tier.vip, str(PORT), str(seconds), str(_PROBE_TIMEOUT)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "started"
    return process


def _trial(tier: TierLab, node: int, mode: str, probe_seconds: float) -> dict[str, Any]:
    probe = _probe(tier, probe_seconds)
    started = time.monotonic()
    if mode == "host_down":
        tier.lab.host_down(f"h{node}")
    else:
        tier.lab.partition(f"h{node}")
    tier.tier.wait_next_hops(tier.vip, set(NODES) - {node}, _WAIT)
    withdrawn = time.monotonic() - started
    out, _ = probe.communicate(timeout=probe_seconds + 30)
    counts = json.loads(out.strip().splitlines()[-1])
    tier.lab.heal(f"h{node}")
    if mode == "host_down":
        tier.tier.start_node(node)
    tier.tier.wait_next_hops(tier.vip, set(NODES), _WAIT)
    return {"withdrawal_s": withdrawn, **counts}


def _summary(trials: list[dict[str, Any]]) -> dict[str, Any]:
    times = [row["withdrawal_s"] for row in trials]
    return {
        "trials": len(trials),
        "withdrawal_ms_p50": round(statistics.median(times) * 1000, 1),
        "withdrawal_ms_max": round(max(times) * 1000, 1),
        "failed_new_connections": sum(row["failed"] for row in trials),
        "new_connections": sum(row["ok"] + row["failed"] for row in trials),
    }


def _survival(tier: TierLab, held: int, node: int, mode: str) -> dict[str, Any]:
    """Established connections that still answer after ``node`` died; the node comes back."""
    argv = ["ip", "netns", "exec", tier.lab.names.client, sys.executable, HOLD]
    vip, flows = (tier.vip, tier.flows_per_node)
    if mode == "dsr":
        vip, flows = (tier.dsr_vip, tier.dsr_flows_per_node)
    before = flows()
    hold = subprocess.Popen(
        [*argv, vip, str(PORT), str(held)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert hold.stdout is not None and hold.stdout.readline().strip() == "ready"
    opened = flows()
    tier.lab.host_down(f"h{node}")
    tier.tier.wait_next_hops(vip, set(NODES) - {node}, _WAIT)
    out, _ = hold.communicate("go\n", timeout=60)
    result = json.loads(out.strip().splitlines()[-1])
    tier.lab.heal(f"h{node}")
    tier.tier.start_node(node)
    tier.tier.wait_next_hops(vip, set(NODES), _WAIT)
    return {
        "established": held,
        "through_the_dead_node": opened[node] - before[node],
        "survived": result["survived"],
        "survived_share": round(result["survived"] / held, 3),
    }


def _group_change(tier: TierLab, held: int) -> dict[str, Any]:
    """The DSR VIP's group grown from nodes 1-2 to 1-3 and shrunk back, under new
    connections and with ``held`` established ones: time until the router uses the new node
    set, new connections failed meanwhile, held connections still answering afterwards."""
    groups = TierGroups()
    groups.add_group("all", NODES)
    groups.add_group("g1", NODES[:2])
    groups.place(tier.vip, "all")
    groups.place(tier.dsr_vip, "g1")
    tier.tier.apply_groups(groups)
    tier.tier.wait_next_hops(tier.dsr_vip, set(NODES[:2]), _WAIT)
    argv = ["ip", "netns", "exec", tier.lab.names.client, sys.executable, HOLD]
    hold = subprocess.Popen(
        [*argv, tier.dsr_vip, str(PORT), str(held)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert hold.stdout is not None and hold.stdout.readline().strip() == "ready"
    probe = _probe(tier, 3.0, tier.dsr_vip)
    started = time.monotonic()
    groups.grow("g1", NODES[2])  # h3 holds the DSR table already: it only announces
    tier.tier.apply_groups(groups)
    tier.tier.wait_next_hops(tier.dsr_vip, set(NODES), _WAIT)
    grown = time.monotonic() - started
    time.sleep(0.5)
    started = time.monotonic()
    groups.shrink("g1", NODES[2])
    tier.tier.apply_groups(groups)
    tier.tier.wait_next_hops(tier.dsr_vip, set(NODES[:2]), _WAIT)
    shrunk = time.monotonic() - started
    out, _ = probe.communicate(timeout=60)
    counts = json.loads(out.strip().splitlines()[-1])
    held_out, _ = hold.communicate("go\n", timeout=60)
    survived = json.loads(held_out.strip().splitlines()[-1])["survived"]
    groups.grow("g1", NODES[2])
    tier.tier.apply_groups(groups)
    tier.tier.wait_next_hops(tier.dsr_vip, set(NODES), _WAIT)
    return {
        "return_mode": "dsr",
        "grow_ms": round(grown * 1000, 1),
        "shrink_ms": round(shrunk * 1000, 1),
        "new_connections": counts["ok"] + counts["failed"],
        "failed_new_connections": counts["failed"],
        "held": held,
        "held_survived": survived,
    }


def _announce_all(tier: TierLab) -> None:
    """Both VIPs announced by every node again (how the other phases expect them)."""
    for node in NODES:
        tier.tier.announce(node, [tier.vip, tier.dsr_vip])
    for vip in (tier.vip, tier.dsr_vip):
        tier.tier.wait_next_hops(vip, set(NODES), _WAIT)


def _group_move(tier: TierLab, held: int, mode: str) -> dict[str, Any]:
    """A VIP moved from group a (h1, h2) to group b (h3) under load, make before break.

    Every node holds both VIPs' tables (a control plane programs a VIP's table on the nodes
    of its new group before they announce it); what changes is only who announces. With
    DSR the node a flow lands on sends it to the same member with no per-flow state, so
    held flows survive; in NAT mode their conntrack entries stay on the old group's nodes.
    """
    vip = tier.dsr_vip if mode == "dsr" else tier.vip
    other = tier.vip if mode == "dsr" else tier.dsr_vip
    groups = TierGroups()
    groups.add_group("a", NODES[:2])
    groups.add_group("b", NODES[2:])
    groups.add_group("all", NODES)
    groups.place(other, "all")
    groups.place(vip, "a")
    tier.tier.apply_groups(groups)
    tier.tier.wait_next_hops(vip, set(NODES[:2]), _WAIT)
    argv = ["ip", "netns", "exec", tier.lab.names.client, sys.executable, HOLD]
    hold = subprocess.Popen(
        [*argv, vip, str(PORT), str(held)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert hold.stdout is not None and hold.stdout.readline().strip() == "ready"
    probe = _probe(tier, 2.0, vip)
    started = time.monotonic()
    for node in groups.members["b"]:  # make: the new group announces too
        tier.tier.announce(node, [*tier.tier.announced(node), vip])
    tier.tier.wait_next_hops(vip, set(NODES), _WAIT)
    groups.place(vip, "b")  # break: the old group's nodes withdraw
    tier.tier.apply_groups(groups)
    tier.tier.wait_next_hops(vip, set(NODES[2:]), _WAIT)
    moved = time.monotonic() - started
    out, _ = probe.communicate(timeout=60)
    counts = json.loads(out.strip().splitlines()[-1])
    held_out, _ = hold.communicate("go\n", timeout=60)
    survived = json.loads(held_out.strip().splitlines()[-1])["survived"]
    _announce_all(tier)
    return {
        "from_nodes": list(NODES[:2]),
        "to_nodes": list(NODES[2:]),
        "move_ms": round(moved * 1000, 1),
        "new_connections": counts["ok"] + counts["failed"],
        "failed_new_connections": counts["failed"],
        "held": held,
        "held_survived": survived,
        "held_survived_share": round(survived / held, 3),
    }


def _rate(tier: TierLab, seconds: float) -> dict[str, float]:
    """New TCP connections/s (each one answered) to the DSR VIP with its group at 1, 2, 3
    nodes: two client processes at once, one connection after another each."""
    groups = TierGroups()
    groups.add_group("all", NODES)
    groups.add_group("g1", NODES[:1])
    groups.place(tier.vip, "all")
    groups.place(tier.dsr_vip, "g1")
    rates: dict[str, float] = {}
    argv = ["ip", "netns", "exec", tier.lab.names.client, sys.executable, PEERS, "rate", "tcp"]
    for count in range(1, len(NODES) + 1):
        groups.members["g1"] = set(NODES[:count])
        tier.tier.apply_groups(groups)
        tier.tier.wait_next_hops(tier.dsr_vip, set(NODES[:count]), _WAIT)
        clients = [
            subprocess.Popen([*argv, tier.dsr_vip, str(PORT), str(seconds)], stdout=subprocess.PIPE)
            for _ in range(2)
        ]
        rates[f"nodes_{count}"] = round(sum(float(c.communicate()[0]) for c in clients))
    return rates


def run(trials: int, bfd: bool, held: int, only_move: bool = False) -> dict[str, Any]:
    name = f"b{uuid.uuid4().hex[:7]}"
    # Without BFD a link loss waits for the 3 s hold timer: the probe must outlast it.
    probe_seconds = {"host_down": 1.0, "link_loss": 1.5 if bfd else 4.5}
    with (
        tempfile.TemporaryDirectory() as state_dir,
        tier_lab(name, Path(state_dir), bfd=bfd) as tier,
    ):
        results: dict[str, Any] = {"bfd": bfd, "nodes": len(NODES)}
        if not only_move:
            # First: the client's ports collide with the members' TIME_WAIT entries once some
            # 20 000 connections were made within a minute, which slowed later rounds tenfold.
            results["dsr_connections_per_s"] = _rate(tier, 1.0 if trials == 1 else 3.0)
        if only_move:
            results["group_move"] = {mode: _group_move(tier, held, mode) for mode in ("dsr", "nat")}
            return _with_load(results)
        for mode in ("host_down", "link_loss"):
            rows = [
                _trial(tier, NODES[index % len(NODES)], mode, probe_seconds[mode])
                for index in range(trials)
            ]
            results[mode] = _summary(rows)
        results["survival"] = {
            mode: _survival(tier, held, NODES[index], mode)
            for index, mode in enumerate(("nat", "dsr"))
        }
        results["group_grow_shrink"] = _group_change(tier, held)
        results["group_move"] = {mode: _group_move(tier, held, mode) for mode in ("dsr", "nat")}
        return _with_load(results)


def _with_load(results: dict[str, Any]) -> dict[str, Any]:
    results["load_average_1m"] = round(os.getloadavg()[0], 1)
    results["uptime"] = subprocess.run(
        ["uptime"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one trial of each (smoke test)")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--no-bfd", action="store_true", help="BGP hold timer only")
    parser.add_argument("--held", type=int, default=200, help="established connections")
    parser.add_argument("--only-move", action="store_true", help="only the group_move figures")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print(json.dumps({"skipped": "the tier lab needs root (network namespaces)"}))
        return
    trials, held = (1, 30) if args.quick else (args.trials, args.held)
    print(json.dumps(run(trials, not args.no_bfd, held, args.only_move), indent=2))


if __name__ == "__main__":
    main()
