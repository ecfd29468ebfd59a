"""How lbaas's cost grows with the number of load balancers (issue 34): JSON on stdout.

    python bench/scale.py [--quick] [--sizes 100,1000,10000] [--projects 200]
                          [--clients 50] [--amphora-every 20] [--max-amphorae 50]
                          [--read-seconds 30] [--admin-url postgresql://...]
                          [--lab [--hosts 3] [--control 3] [--standby-every 5]]
                          [--plot FILE.svg] [--plot-from FIGURES.json]

Needs root. Makes a network namespace of its own and a throw-away PostgreSQL cluster
(``bench/scale_pg.py``: Debian's PostgreSQL 15 in a temporary directory, with
``pg_stat_statements``; stopped and removed at the end), or only a throw-away database on
the existing server at ``--admin-url``, then, inside the namespace, runs one
``lbaas serve`` (amphora and distributed providers), one node ``lbaas agent`` for the
distributed provider and a backend for every member (``bench/scale_world.py``). The sizes
are cumulative: at each, the load balancers still missing are created through the API by
``--clients`` threads (``bench/scale_load.py``: whole trees in one POST, over
``--projects`` tenants; every ``--amphora-every``-th an amphora with a real HAProxy, at
most ``--max-amphorae``, the rest distributed), and measured:

- ``create``: latency of each POST under the clients; ``converge``: load balancers ACTIVE
  per second from the first POST to the last ACTIVE;
- ``api``: p50/p99 of a tenant's show and list and of an administrator's walk over every
  page of the full list, ``--clients`` threads for ``--read-seconds``;
- ``memory``: RSS of serve, its worker, the node agent and the HAProxies;
- ``database``: rows, size, the tables most scanned sequentially, and the slowest
  statements since the size began (``pg_stat_statements``: ten by total and ten by mean
  time; "unavailable" on an ``--admin-url`` server without the library);
- ``resync``: serve stopped and started again with ``worker.resync_interval`` 1 s, so
  every load balancer is compared with its data plane at once: seconds until each was
  re-converged once, the CPU of the control plane and of the HAProxies meanwhile, the
  HAProxies it reloaded and the slowest statements of the resync alone.

``--plot FILE.svg`` draws the curves against the size (``bench/scale_plot.py``);
``--plot-from`` redraws them from the JSON of an earlier run without running anything.

``--lab``: the same sizes and measures in a lab (``bench/scale_lab.py``): ``--control``
control hosts (api, worker, health each) on the lab's PostgreSQL (``pg_stat_statements``
preloaded), ``--hosts`` agent hosts whose agents are the distributed provider's nodes and
the amphorae's hosts, the clients in the lab's client namespace spread over the control
hosts' APIs, the members' backend on the router's member-network address. Every
``--standby-every``-th amphora load balancer is ACTIVE_STANDBY (netns agents run
keepalived). The resync restarts the control hosts' processes only; memory is given per
host; ``agent_restart``: one agent SIGKILLed and started again, the seconds until it
listens, its amphorae adopted. The lab is taken down at the end, on failure and ^C too.
Without ``--lab``, ACTIVE_STANDBY is not in the mix: serve's own agent runs in loopback
mode, which refuses it. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_lab import LabScaleWorld, lab_database, lab_shape, scale_lab  # noqa: E402
from scale_load import Timings, build, project_of, read_mix, set_target  # noqa: E402
from scale_pg import (  # noqa: E402
    BENCH,
    Db,
    Server,
    database,
    reset_statements,
    server_for,
    slowest_statements,
)
from scale_plot import write_plot  # noqa: E402
from scale_world import ScaleWorld, kill_haproxies  # noqa: E402

from lbaas.lab.lab import Lab  # noqa: E402
from lbaas.lab.processes import in_namespace  # noqa: E402

TABLES = ("load_balancers", "listeners", "pools", "members", "health_monitors",
          "amphorae", "converge_jobs", "ports", "listener_stats")  # fmt: skip


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--quick", action="store_true", help="size 20, a few seconds each (the smoke test)"
    )
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--amphora-every", type=int, default=20)
    parser.add_argument("--max-amphorae", type=int, default=50)
    parser.add_argument("--read-seconds", type=float, default=30.0)
    parser.add_argument(
        "--resync-timeout", type=float, default=1800.0, help="stop waiting; report how many"
    )
    parser.add_argument(
        "--settle-timeout",
        type=float,
        default=900.0,
        help="after the creates, wait this long for every load balancer ACTIVE or ERROR, "
        "then measure with those still PENDING reported in the statuses",
    )
    parser.add_argument(
        "--admin-url", default="", help="an existing server instead of a cluster of our own"
    )
    parser.add_argument("--lab", action="store_true", help="in a lab (bench/scale_lab.py)")
    parser.add_argument("--hosts", type=int, default=3, help="--lab: agent hosts")
    parser.add_argument("--control", type=int, default=3, help="--lab: control hosts")
    parser.add_argument(
        "--standby-every", type=int, default=5, help="--lab: every Nth amphora a pair"
    )
    parser.add_argument("--plot", default="", help="write the curves to this SVG file")
    parser.add_argument("--plot-from", default="", help="only draw --plot from this JSON")
    parser.add_argument("--inside", default="", help=argparse.SUPPRESS)  # database name
    parser.add_argument("--socket-dir", default="", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--state", default="", help=argparse.SUPPRESS)
    parser.add_argument("--inside-lab", default="", help=argparse.SUPPRESS)  # the lab's name
    parser.add_argument("--flavor", default="", help=argparse.SUPPRESS)  # ACTIVE_STANDBY's
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.projects, args.clients = "20", 5, 8
        args.max_amphorae, args.read_seconds, args.amphora_every = 2, 3.0, 20
        if args.lab:  # two amphora load balancers: a pair and a SINGLE
            args.amphora_every = 10
    return args


def _stop(signum: int, frame: object) -> None:
    sys.exit(128 + signum)  # SystemExit: every ``finally`` below runs


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    args = _args()
    if args.inside:
        db = Db(Server(args.socket_dir, args.port), args.inside)
        world = ScaleWorld(Path(args.state), db.sqlalchemy_url())
        print(json.dumps(_inside(args, db, world)))
        return
    if args.inside_lab:
        print(json.dumps(_inside_lab(args)))
        return
    if args.plot_from:
        write_plot(json.loads(Path(args.plot_from).read_text()), Path(args.plot))
        return
    if os.geteuid() != 0:
        sys.exit("bench/scale.py needs root (a network namespace and nftables)")
    started = time.monotonic()
    figures: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "load_average_before": os.getloadavg(),
    }
    if args.lab:
        figures["postgresql"] = "the lab's database host"
        figures.update(_outer_lab(args))
    else:
        with server_for(args.admin_url) as server:
            figures["postgresql"] = "--admin-url" if args.admin_url else "own cluster"
            figures.update(_outer(server))
    figures["load_average_after"] = os.getloadavg()
    figures["wall_seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(figures, indent=2))
    if args.plot:
        write_plot(figures, Path(args.plot))


def _outer(server: Server) -> dict[str, Any]:
    """Database and namespace made, the inner run inside; its figures."""
    tag = uuid.uuid4().hex[:8]
    with database(server, f"scale_{tag}") as db, _namespace(f"scale{tag}") as ns:
        state = Path(tempfile.mkdtemp(prefix="scale-", dir="/tmp"))
        argv = [sys.executable, "-W", "ignore", __file__, "--inside", db.name,
                "--socket-dir", server.socket_dir, "--port", str(server.port),
                "--state", str(state), *sys.argv[1:]]  # fmt: skip

        def cleanup() -> None:
            kill_haproxies(state)  # whatever the inner run could not stop
            shutil.rmtree(state, ignore_errors=True)

        return _inner_figures(["ip", "netns", "exec", ns, *argv], cleanup)


def _outer_lab(args: argparse.Namespace) -> dict[str, Any]:
    """The lab built, the inner run in its client namespace; its figures. The lab is
    taken down whatever happens (``scale_lab``)."""
    directory = Path(tempfile.mkdtemp(prefix="sc", dir="/tmp"))  # short: socket paths
    try:
        with scale_lab(directory, args.hosts, args.control) as world:
            argv = [sys.executable, "-W", "ignore", __file__, "--inside-lab",
                    world.lab.names.lab, "--state", str(directory), "--flavor", world.flavor,
                    *sys.argv[1:]]  # fmt: skip
            # The client's network namespace only (``in_namespace``), not ``ip netns
            # exec``'s mount namespace: an agent the inner run restarts from there made
            # amphora namespaces whose names never reached the machine's /run/netns, so
            # ``down`` could not find their HAProxies.
            return _inner_figures(in_namespace(world.lab.names.client, argv), lambda: None)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _inner_figures(argv: list[str], cleanup: Callable[[], None]) -> dict[str, Any]:
    """The inner run's JSON; ``cleanup`` runs once it has ended, whatever happened."""
    inner = subprocess.Popen(argv, stdout=subprocess.PIPE)
    try:
        out, _ = inner.communicate()
    finally:
        if inner.poll() is None:  # stopped ourselves: the inner run cleans up first
            inner.terminate()
            inner.wait(300)  # serve and the agent get 70 s and 30 s to stop
        cleanup()
    if inner.returncode != 0:
        sys.exit(f"the run failed ({inner.returncode})")
    found: dict[str, Any] = json.loads(out)
    return found


def _inside_lab(args: argparse.Namespace) -> dict[str, Any]:
    """The whole run in the lab's client namespace."""
    lab = Lab(args.inside_lab, Path(args.state))
    last = max(int(s) for s in args.sizes.split(","))
    amphorae = sorted(range(0, last, args.amphora_every)[: args.max_amphorae])
    standby = frozenset(amphorae[:: args.standby_every])
    world = LabScaleWorld(lab)
    set_target(world.urls, lab_shape(lab, args.flavor, standby))
    found = _inside(args, lab_database(lab), world)
    state = lab.state()
    found["setup"] = (f"lab: {state.control} control hosts (api, worker, health) on "
                      f"PostgreSQL, {state.hosts} agent hosts")  # fmt: skip
    found["standby_every"] = args.standby_every
    for size in found["sizes"]:
        n = size["load_balancers"]
        size["active_standby_load_balancers"] = sum(1 for i in standby if i < n)
    found["vip_network"] = state.networks["vip"]
    return found


@contextmanager
def _namespace(name: str) -> Iterator[str]:
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


def _inside(args: argparse.Namespace, db: Db, world: Any) -> dict[str, Any]:
    """The whole run, in the namespace; the database ``db`` exists and holds no load
    balancer. ``world``: a ``ScaleWorld`` or, with ``--lab``, a ``LabScaleWorld``."""
    sizes = [int(s) for s in args.sizes.split(",")]
    amphorae = set(range(0, sizes[-1], args.amphora_every)[: args.max_amphorae])
    results: list[dict[str, Any]] = []
    by_project: dict[str, list[str]] = {}
    try:
        world.start()
        if not args.lab:
            set_target([world.url])
        done = 0
        for size in sizes:
            world.start_serve()
            results.append(_one_size(args, world, db, (done, size), amphorae, by_project))
            done = size
            if args.lab:
                results[-1]["agent_restart"] = world.restart_agent()
            note(f"size {size}: {json.dumps(results[-1])}")  # kept if a later size is cut
            results[-1]["resync"] = _resync(world, size, db, args.resync_timeout)
            note(f"size {size} resync: {json.dumps(results[-1]['resync'])}")
            world.stop_serve()
    finally:
        world.close()
    return {
        "setup": "one lbaas serve + one node agent in a namespace, PostgreSQL",
        "projects": args.projects,
        "clients": args.clients,
        "amphora_every": args.amphora_every,
        "max_amphorae": args.max_amphorae,
        "sizes": results,
    }


def _one_size(
    args: argparse.Namespace,
    world: Any,
    db: Db,
    span: tuple[int, int],
    amphorae: set[int],
    by_project: dict[str, list[str]],
) -> dict[str, Any]:
    done, size = span
    with db.connect() as conn:
        reset_statements(conn)  # the slowest statements are this size's own
    creates = Timings()
    indices = list(range(done, size))
    started = time.monotonic()
    note(f"creating {len(indices)} load balancers")
    ids, post_seconds = build(indices, amphorae, args.projects, args.clients, creates)
    note(f"created {len(ids)} in {post_seconds:.1f} s; waiting for ACTIVE")
    if len(ids) < len(indices):
        raise RuntimeError(f"creates failed: {creates.summary()}")
    statuses = _wait_settled(db, size, args.settle_timeout)
    converge_seconds = time.monotonic() - started
    active = max(0, statuses.get("ACTIVE", 0) - done)  # the earlier sizes' were ACTIVE
    for index, lb_id in _index_ids(db, ids):
        by_project.setdefault(project_of(index, args.projects), []).append(lb_id)
    note("reads")
    reads = Timings()
    held = read_mix(by_project, args.clients, args.read_seconds, reads)
    return {
        "load_balancers": size,
        "amphora_load_balancers": sum(1 for i in amphorae if i < size),
        "load_average": os.getloadavg(),
        "create": creates.summary(),
        "converge": {
            "created": len(ids),
            "posts_seconds": round(post_seconds, 2),
            "all_settled_seconds": round(converge_seconds, 2),
            # Of this size's creates; the load balancers still PENDING when
            # --settle-timeout ran out are in ``statuses`` and not counted.
            "active_per_second": round(active / converge_seconds, 1),
            "statuses": statuses,
        },
        "api": {**reads.summary(), **held},
        "memory": world.process_rss(),
        "database": _database_figures(db),
    }


def note(text: str) -> None:
    """Progress on stderr (stdout is the JSON)."""
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def _statuses(db: Db) -> dict[str, int]:
    with db.connect() as conn:
        rows = conn.execute(
            f"{BENCH} SELECT provisioning_status, count(*) FROM load_balancers GROUP BY 1"
        ).fetchall()
    return {str(status): int(count) for status, count in rows}


def _wait_settled(db: Db, size: int, timeout: float) -> dict[str, int]:
    """Until every load balancer is ACTIVE or ERROR, or ``timeout`` passed; the counts by
    status (those still PENDING_* then among them: the measures go on without them)."""
    deadline = time.monotonic() + timeout
    shown = time.monotonic()
    while time.monotonic() < deadline:
        counts = _statuses(db)
        if counts.get("ACTIVE", 0) + counts.get("ERROR", 0) >= size:
            return counts
        if time.monotonic() > shown + 10:
            shown = time.monotonic()
            note(f"statuses {counts}")
        time.sleep(0.5)
    note(f"--settle-timeout: not settled, going on: {_statuses(db)}")
    return _statuses(db)


def _index_ids(db: Db, ids: list[str]) -> list[tuple[int, str]]:
    with db.connect() as conn:
        rows = conn.execute(
            f"{BENCH} SELECT name, id FROM load_balancers WHERE id = ANY(%s)", (ids,)
        ).fetchall()
    return [(int(str(n).rsplit("-", 1)[1]), str(i)) for n, i in rows]


def _one(conn: psycopg.Connection[Any], query: str) -> int:
    row = conn.execute(f"{BENCH} {query}".encode()).fetchone()
    return int(row[0]) if row else 0


def _database_figures(db: Db) -> dict[str, Any]:
    with db.connect() as conn:
        rows = {t: _one(conn, f"SELECT count(*) FROM {t}") for t in TABLES}
        size = _one(conn, "SELECT pg_database_size(current_database())")
        scans = conn.execute(
            f"{BENCH} SELECT relname, seq_scan, seq_tup_read, idx_scan FROM pg_stat_user_tables "
            "ORDER BY seq_tup_read DESC LIMIT 6"
        ).fetchall()
        slowest = slowest_statements(conn)
    return {
        "rows": rows,
        "size_mb": round(size / 2**20, 1),
        "most_sequentially_read": [
            {"table": r[0], "seq_scans": r[1], "rows_read_by_seq_scans": r[2], "index_scans": r[3]}
            for r in scans
        ],
        "slowest_statements": slowest,
    }


def _resync(world: Any, size: int, db: Db, timeout: float) -> dict[str, Any]:
    """serve restarted with a 1 s resync interval: until every load balancer was
    compared with its data plane once (converged again, or checked by the version its
    data plane holds); what it cost when nothing differs."""
    note("resync")
    world.stop_serve()
    with db.connect() as conn:
        conn.execute("DROP TABLE IF EXISTS scale_baseline")
        # The ACTIVE ones: one stuck PENDING (see --settle-timeout) would never count.
        conn.execute("CREATE TABLE scale_baseline AS SELECT j.loadbalancer_id, j.done_gen, "
                     "j.updated_at FROM converge_jobs j JOIN load_balancers l "
                     "ON l.id = j.loadbalancer_id WHERE l.provisioning_status = 'ACTIVE'")  # fmt: skip
        size = _one(conn, "SELECT count(*) FROM scale_baseline")
        reset_statements(conn)
    haproxies = set(world.haproxy_pids())
    before = world.cpu()
    started = time.monotonic()
    answer = world.start_serve(resync_interval=1.0)
    redone, checked, shown = 0, 0, started
    while time.monotonic() - started < timeout:
        # Compared: converged again (done_gen moved) or checked against the version its
        # data plane holds (``lbaas.jobs.resync_check``: only updated_at moved, and
        # nothing queued: queueing a converge moves updated_at too).
        with db.connect() as conn:
            found = conn.execute(
                f"{BENCH} SELECT count(*) FILTER (WHERE j.done_gen > b.done_gen), "
                "count(*) FILTER (WHERE j.done_gen = b.done_gen AND j.updated_at > b.updated_at "
                "AND j.requested_gen <= j.done_gen) "
                "FROM converge_jobs j JOIN scale_baseline b USING (loadbalancer_id)"
            ).fetchone()
        redone, checked = (int(found[0]), int(found[1])) if found else (0, 0)
        if redone + checked >= size:
            break
        if time.monotonic() > shown + 10:
            shown = time.monotonic()
            note(f"compared {redone + checked} of {size} ({checked} by version)")
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    cpu = world.cpu()
    after = set(world.haproxy_pids())
    with db.connect() as conn:
        slowest = slowest_statements(conn)
    return {
        "serve_answering_seconds": round(answer, 2),
        "all_reconverged_seconds": round(elapsed, 2),
        "active_at_start": size,  # the load balancers the resync waits for
        "reconverged": redone + checked,  # fewer than active_at_start: the timeout passed
        "converged_again": redone,
        "checked_by_version": checked,  # held at the version sent: not converged
        # serve's includes its start-up (imports: about 4 s on this machine).
        "serve_and_worker_cpu_seconds": round(cpu["serve_and_worker"], 2),
        "node_agent_cpu_seconds": round(cpu["node_agent"] - before["node_agent"], 2),
        # While serve is down its agent is too: each HAProxy's access-log forwarder
        # retries its refused connection without pause (docs/architecture.md, "Scale").
        "haproxy_cpu_seconds": round(cpu["haproxy"] - before["haproxy"], 2),
        "haproxy_processes_replaced": len(haproxies - after),
        "load_average": os.getloadavg(),
        "slowest_statements": slowest,
    }


if __name__ == "__main__":
    main()
