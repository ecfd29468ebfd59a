"""The coordination engines measured: a lease renewal's latency, a leader change's time.

    python bench/coordination.py [--renewals 300] [--changes 5] [--quick]

Against the real engines on this machine: the suite's PostgreSQL (127.0.0.1:5432, database
``test``, a lease table of this run's name, dropped after) and an etcd this script starts
on loopback ports (``tests.coordination.engines.etcd_server``; skipped when etcd is not
installed). Per engine:

- ``renew_ms``: one holder renewing its lease back to back, each call timed (p50, p99, max);
- ``takeover_s``: a leader (lease ``leader/bench``) stops renewing, as a crashed process
  does, while a follower tries every 10 ms; from the leader's last renewal until the
  follower holds it (the TTL asked for, plus what the engine adds);
- ``handover_ms``: the leader releases (a clean stop); until the follower holds it.

The TTL asked for is 0.5 s (TLB's lease); etcd grants whole seconds of at least its
minimum, which ``takeover_s`` shows. Prints JSON with the machine's load average before
and after; asserts nothing on time. ``--quick`` (20 renewals, one leader change per
engine) is what ``tests/bench/test_bench_smoke_coordination.py`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lbaas.coordination.base import Coordinator  # noqa: E402
from lbaas.coordination.etcd import EtcdCoordinator  # noqa: E402
from lbaas.coordination.postgres import PostgresCoordinator  # noqa: E402
from tests.coordination.engines import POSTGRES_URL, etcd_server  # noqa: E402

TTL = 0.5
_POLL = 0.01


def _renewals(engine: Coordinator, count: int) -> dict[str, float]:
    took = []
    for _ in range(count):
        started = time.perf_counter()
        engine.renew("tier/bench", "node", TTL)
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return {
        "p50": round(statistics.median(took), 3),
        "p99": round(took[int(len(took) * 0.99) - 1], 3),
        "max": round(took[-1], 3),
    }


def _until_taken(engine: Coordinator, since: float) -> float:
    while not engine.renew("leader/bench", "follower", TTL):
        time.sleep(_POLL)
    return time.monotonic() - since


def _changes(leader: Coordinator, follower: Coordinator, count: int) -> dict[str, Any]:
    takeovers, handovers = [], []
    for _ in range(count):
        assert leader.renew("leader/bench", "leader", TTL)
        last = time.monotonic()  # ...and then nothing: the leader crashed
        takeovers.append(_until_taken(follower, last))
        follower.release("leader/bench", "follower")
        assert leader.renew("leader/bench", "leader", TTL)
        released = time.monotonic()
        leader.release("leader/bench", "leader")
        handovers.append(_until_taken(follower, released) * 1000)
        follower.release("leader/bench", "follower")
    return {
        "takeover_s": {
            "p50": round(statistics.median(takeovers), 3),
            "max": round(max(takeovers), 3),
        },
        "handover_ms": {
            "p50": round(statistics.median(handovers), 3),
            "max": round(max(handovers), 3),
        },
    }


def _measure(make: Any, renewals: int, changes: int) -> dict[str, Any]:
    engine, follower = make(), make()
    try:
        return {"renew_ms": _renewals(engine, renewals), **_changes(engine, follower, changes)}
    finally:
        engine.close()
        follower.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renewals", type=int, default=300)
    parser.add_argument("--changes", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="20 renewals, one change")
    args = parser.parse_args()
    if args.quick:
        args.renewals, args.changes = 20, 1
    result: dict[str, Any] = {"load_before": os.getloadavg(), "ttl_s": TTL}
    table = f"lbaas_lease_bench_{uuid.uuid4().hex[:8]}"
    owner = PostgresCoordinator(POSTGRES_URL, table)
    owner.create()
    try:
        make = lambda: PostgresCoordinator(POSTGRES_URL, table)  # noqa: E731 - a process each
        result["postgresql"] = _measure(make, args.renewals, args.changes)
    finally:
        owner.drop()
        owner.close()
    if shutil.which("etcd") is None:
        result["etcd"] = "not installed (Debian: etcd-server)"
    else:
        with tempfile.TemporaryDirectory() as directory, etcd_server(Path(directory)) as url:
            make_etcd = lambda: EtcdCoordinator(url)  # noqa: E731
            result["etcd"] = _measure(make_etcd, args.renewals, args.changes)
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
