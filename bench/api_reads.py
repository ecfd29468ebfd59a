"""What one API read costs at N load balancers: CPU, SQL statements and latency (issue 34).

    python bench/api_reads.py [--quick] [--sizes 1000,10000] [--projects 200]
                              [--requests 200] [--clients 50] [--seconds 20]
                              [--admin-url postgresql://postgres@127.0.0.1:5432/test]
                              [--py-spy BIN --profile-dir DIR]

A throw-away database on the existing PostgreSQL server (created, and dropped at the end)
is filled with load balancers over ``--projects`` tenants, each with a whole tree (a
listener, a pool, two members, a health monitor, its VIP port): one tree is made through
the API in-process (the noop provider converges it to ACTIVE), then copied row by row with
new ids, names, projects and creation times, so the rows are the API's own without paying
a converge per load balancer. The sizes are cumulative. At each, one ``lbaas api`` process
(noauth, the noop provider, no worker: reads only) is started on loopback through this
script's ``--api-child`` mode, which counts the SQL statements its engine sends and their
time (SQLAlchemy's cursor events, read by SIGUSR1), and measured:

- ``per_request``: for each read, ``--requests`` sent one after another from one client:
  the API process's CPU milliseconds per request (``/proc``), the CPU of the PostgreSQL
  backends serving the database (``database_cpu_ms``: the same machine's ``/proc``, which
  the load of other work does not inflate as it does the statements' wall time), its
  statements and their milliseconds per request, and the wall milliseconds; reads are a tenant's show, a
  tenant's list (its ``N / projects`` load balancers), the administrator's first page
  with ``limit=1000`` and without ``limit`` (``api.pagination_max_limit``), its second
  page (with a marker), and the members of a pool;
- ``under_clients``: ``--clients`` threads for ``--seconds`` of the mix of
  ``bench/scale_load.py`` (45 % show, 45 % tenant list, 10 % the administrator's walk over
  every page): requests per second, p50/p99 of each, and the CPU seconds the API and
  the database backends used meanwhile.

With ``--py-spy`` (py-spy is not a dependency of the project) each read's sequential run
is also sampled into ``DIR/<size>-<read>.txt`` (py-spy's collapsed stacks). The load
average is given at each size: the machine is shared. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale_load import Timings, project_of, read_mix, set_target  # noqa: E402
from scale_world import free_port  # noqa: E402

from tests.support.processes import lbaas_env  # noqa: E402

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
LB = "/v2/lbaas/loadbalancers"
SUBNET = "7f000a00-0000-4000-8000-000000000001"  # the loopback subnet's id
COUNTERS = "API_READS_COUNTERS"  # where the child writes its statement counters
# Copied per load balancer, parents first; each row's ids are replaced by new ones.
TREE_TABLES = ("ports", "load_balancers", "pools", "listeners", "members", "health_monitors")


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--requests", type=int, default=200, help="sequential, per read")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0, help="of the mix, per size")
    parser.add_argument("--admin-url", default=ADMIN_URL)
    parser.add_argument("--py-spy", default="", help="py-spy's binary: profile each read")
    parser.add_argument("--profile-dir", default="")
    parser.add_argument("--api-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.projects, args.requests = "20", 4, 5
        args.clients, args.seconds = 4, 1.0
    return args


# --- the API process ------------------------------------------------------------------


def api_child() -> int:
    """``lbaas api``, its engine's statements counted; SIGUSR1 writes the counts."""
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from lbaas import cli

    counts = {"statements": 0, "seconds": 0.0, "reads": 0}
    started: list[float] = []

    @event.listens_for(Engine, "before_cursor_execute")
    def before(*_: Any) -> None:
        started.append(time.perf_counter())

    @event.listens_for(Engine, "after_cursor_execute")
    def after(*_: Any) -> None:
        counts["statements"] += 1
        if started:
            counts["seconds"] += time.perf_counter() - started.pop()

    def dump(*_: Any) -> None:
        counts["reads"] += 1
        path = Path(os.environ[COUNTERS])
        path.with_suffix(".tmp").write_text(json.dumps(counts))
        path.with_suffix(".tmp").rename(path)

    signal.signal(signal.SIGUSR1, dump)
    return cli.main(["api"])


class Api:
    """One ``lbaas api`` child on a free loopback port."""

    def __init__(self, settings: dict[str, Any], state: Path) -> None:
        self.port = free_port()
        self.counters = state / "counters.json"
        env = lbaas_env({**settings, "api": {"port": self.port}})
        env[COUNTERS] = str(self.counters)
        self.log = open(state / "api.log", "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--api-child"], env=env, stdout=self.log, stderr=self.log
        )
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.process.poll() is None, (state / "api.log").read_text()[-2000:]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/", timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError("the API did not answer")

    def cpu_seconds(self) -> float:
        return _process_cpu(self.process.pid)

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
        return 0.0

    def sql(self) -> dict[str, float]:
        """The child's statement counters now."""
        before = self._read()
        os.kill(self.process.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            now = self._read()
            if now.get("reads", 0) > before.get("reads", 0):
                return now
            time.sleep(0.01)
        raise RuntimeError("the API did not write its counters")

    def _read(self) -> dict[str, Any]:
        with contextlib.suppress(OSError, ValueError):
            found: dict[str, Any] = json.loads(self.counters.read_text())
            return found
        return {}

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


# --- the database -----------------------------------------------------------------------


@contextlib.contextmanager
def throwaway_database(admin_url: str) -> Iterator[str]:
    """A new database on the server of ``admin_url``; its SQLAlchemy URL. Dropped after."""
    name = f"api_reads_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = admin_url.rsplit("/", 1)[0].split("://", 1)[1]
    try:
        yield f"postgresql+psycopg://{base}/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def settings_for(url: str, state: Path) -> dict[str, Any]:
    return {
        "state_dir": str(state),
        "log_level": "WARNING",
        "database": {"url": url},
        "providers": {"enabled": ["noop"], "default": "noop"},
        "worker": {"poll_interval": 0.05},
    }


def make_template(settings: dict[str, Any]) -> str:
    """One whole tree made through the API and converged (noop): its load balancer's id."""
    from starlette.testclient import TestClient

    from lbaas.api.app import create_asgi_app
    from lbaas.compose import build_control_plane
    from lbaas.config import load_settings

    members = [{"address": f"192.0.2.{10 + m}", "protocol_port": 80} for m in range(2)]
    monitor = {"type": "TCP", "delay": 10, "timeout": 5, "max_retries": 3}
    pool = {"name": "p", "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN", "members": members}
    listener = {"protocol": "TCP", "protocol_port": 80, "default_pool": {**pool}}
    listener["default_pool"]["healthmonitor"] = monitor
    body = {"loadbalancer": {"name": "t", "vip_subnet_id": SUBNET, "listeners": [listener]}}
    plane = build_control_plane(load_settings(environ={}, overrides=settings))
    plane.start()
    try:
        with TestClient(create_asgi_app(plane.services)) as client:
            created = client.post(LB, json=body)
            assert created.status_code == 201, created.text
            lb_id: str = created.json()["loadbalancer"]["id"]
            deadline = time.monotonic() + 60
            while client.get(f"{LB}/{lb_id}").json()["loadbalancer"]["provisioning_status"] != (
                "ACTIVE"
            ):
                assert time.monotonic() < deadline, "the template did not converge"
                time.sleep(0.05)
    finally:
        plane.stop()
    return lb_id


def _template_rows(conn: Any, lb_id: str) -> dict[str, list[dict[str, Any]]]:
    from sqlalchemy import text

    def rows(sql: str, **params: Any) -> list[dict[str, Any]]:
        return [dict(r._mapping) for r in conn.execute(text(sql), params)]

    lb = rows("SELECT * FROM load_balancers WHERE id = :i", i=lb_id)
    pools = rows("SELECT * FROM pools WHERE loadbalancer_id = :i", i=lb_id)
    pool_ids = [p["id"] for p in pools]
    where_pool = "pool_id = ANY(:p)"
    return {
        "ports": rows("SELECT * FROM ports WHERE id = :i", i=lb[0]["vip_port_id"]),
        "load_balancers": lb,
        "pools": pools,
        "listeners": rows("SELECT * FROM listeners WHERE loadbalancer_id = :i", i=lb_id),
        "members": rows(f"SELECT * FROM members WHERE {where_pool}", p=pool_ids),
        "health_monitors": rows(f"SELECT * FROM health_monitors WHERE {where_pool}", p=pool_ids),
    }


def fill(url: str, template: str, start: int, stop: int, projects: int) -> float:
    """Copy the template's tree as load balancers ``start``..``stop - 1``: seconds taken."""
    from sqlalchemy import MetaData, create_engine

    began = time.monotonic()
    engine = create_engine(url)
    meta = MetaData()
    meta.reflect(engine, only=TREE_TABLES)
    base = datetime(2026, 1, 1)
    with engine.begin() as conn:
        model = _template_rows(conn, template)
        ids = {row["id"] for rows in model.values() for row in rows}
        batches: dict[str, list[dict[str, Any]]] = {t: [] for t in TREE_TABLES}
        for index in range(start, stop):
            new = {old: str(uuid.uuid4()) for old in ids}
            address = f"10.{index >> 16 & 255}.{index >> 8 & 255}.{index & 255}"
            for table in TREE_TABLES:
                for row in model[table]:
                    copy = {k: new.get(v, v) if isinstance(v, str) else v for k, v in row.items()}
                    if "project_id" in copy:
                        copy["project_id"] = project_of(index, projects)
                    copy["created_at"] = base + timedelta(seconds=index)
                    if table == "ports":
                        copy["ip_address"] = address
                    if table == "load_balancers":
                        copy["vip_address"], copy["name"] = address, f"scale-{index}"
                    batches[table].append(copy)
            if len(batches["load_balancers"]) >= 1000 or index == stop - 1:
                for table in TREE_TABLES:
                    conn.execute(meta.tables[table].insert(), batches[table])
                    batches[table] = []
    with engine.begin() as conn:
        conn.exec_driver_sql("ANALYZE")
    engine.dispose()
    return round(time.monotonic() - began, 1)


class Backends:
    """The CPU of the PostgreSQL processes serving the bench's database (same machine):
    a measure of the SQL's cost that the load of other work on the machine does not
    inflate, as it does the statements' wall time."""

    def __init__(self, url: str) -> None:
        self.name = url.rsplit("/", 1)[1]
        self.admin = url.replace("postgresql+psycopg://", "postgresql://")

    def cpu_seconds(self) -> float:
        """The CPU so far of the backends connected now (the API's pooled connections)."""
        return sum(self._now().values())

    def _now(self) -> dict[int, float]:
        with psycopg.connect(self.admin, autocommit=True) as conn:
            pids = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.name,),
            ).fetchall()
        found: dict[int, float] = {}
        for (pid,) in pids:
            with contextlib.suppress(OSError):
                found[pid] = _process_cpu(pid)
        return found

    @contextlib.contextmanager
    def tracked(self) -> Iterator[list[float]]:
        """CPU seconds of every backend while the block runs, put in the list at its end:
        sampled every 0.2 s, as the clients' connections come and go (a backend's
        CPU after its last sample is missed)."""
        start, last = self._now(), {}
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.2):
                last.update(self._now())

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        out: list[float] = []
        try:
            yield out
        finally:
            stop.set()
            thread.join()
            last.update(self._now())
            out.append(sum(cpu - start.get(pid, 0.0) for pid, cpu in last.items()))


def _process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def samples(url: str, projects: int) -> dict[str, Any]:
    """Ids to read: load balancers by project, and some pools with their projects."""
    plain = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain) as conn:
        order = "ORDER BY created_at, id"
        lbs = conn.execute(f"SELECT id, project_id FROM load_balancers {order}").fetchall()
        pools = conn.execute("SELECT id, project_id FROM pools LIMIT 500").fetchall()
    by_project: dict[str, list[str]] = {project_of(p, projects): [] for p in range(projects)}
    for lb_id, project in lbs:
        by_project.setdefault(project, []).append(lb_id)
    return {"by_project": by_project, "pools": pools, "lbs": lbs}


# --- the measures -----------------------------------------------------------------------


def _headers(project: str) -> dict[str, str]:
    return {"X-Project-Id": project, "X-Roles": "member"}


def reads(found: dict[str, Any]) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """Each read's requests (path, headers), drawn at random with a fixed seed."""
    rnd = random.Random(34)
    lbs, pools = found["lbs"], found["pools"]
    projects = sorted(p for p, ids in found["by_project"].items() if ids)
    marker = lbs[min(999, len(lbs) // 2)][0]  # the last of the first page of 1,000
    return {
        "show": [(f"{LB}/{i}", _headers(p)) for i, p in (rnd.choice(lbs) for _ in range(50))],
        "tenant_list": [(LB, _headers(rnd.choice(projects))) for _ in range(50)],
        "admin_page_limit_1000": [(f"{LB}?limit=1000", {})],
        "admin_page_default": [(LB, {})],
        "admin_page_marker": [(f"{LB}?limit=1000&marker={marker}", {})],
        "pool_members": [
            (f"/v2/lbaas/pools/{i}/members", _headers(p)) for i, p in rnd.sample(pools, 5)
        ],
    }


def per_request(
    api: Api, db: Backends, requests: list[tuple[str, dict[str, str]]], count: int
) -> dict[str, Any]:
    """``count`` requests one after another (cycling through ``requests``)."""
    with httpx.Client(base_url=api.url, timeout=60) as http:
        for path, headers in requests[:3]:  # warm: first calls import and compile
            http.get(path, headers=headers).raise_for_status()
        sql, db_cpu = api.sql(), db.cpu_seconds()
        cpu, wall = api.cpu_seconds(), time.perf_counter()
        size = 0
        for k in range(count):
            path, headers = requests[k % len(requests)]
            response = http.get(path, headers=headers)
            response.raise_for_status()
            size += len(response.content)
        wall, cpu = time.perf_counter() - wall, api.cpu_seconds() - cpu
    after, db_cpu = api.sql(), db.cpu_seconds() - db_cpu
    return {
        "wall_ms": round(wall * 1000 / count, 2),
        "cpu_ms": round(cpu * 1000 / count, 2),
        "database_cpu_ms": round(db_cpu * 1000 / count, 2),
        "statements": round((after["statements"] - sql["statements"]) / count, 2),
        "sql_ms": round((after["seconds"] - sql["seconds"]) * 1000 / count, 2),
        "bytes": size // count,
    }


@contextlib.contextmanager
def profiled(args: argparse.Namespace, api: Api, name: str) -> Iterator[None]:
    if not args.py_spy:
        yield
        return
    out = Path(args.profile_dir) / f"{name}.txt"
    spy = subprocess.Popen(
        [args.py_spy, "record", "-p", str(api.process.pid), "-f", "raw", "-o", str(out),
         "-r", "200", "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(1.0)
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def one_size(args: argparse.Namespace, settings: dict[str, Any], size: int) -> dict[str, Any]:
    url = settings["database"]["url"]
    found, db = samples(url, args.projects), Backends(url)
    with tempfile.TemporaryDirectory() as tmp:
        api = Api(settings, Path(tmp))
        try:
            figures: dict[str, Any] = {"load_average_start": load_average()}
            measured: dict[str, Any] = {}
            for name, requests in reads(found).items():
                count = args.requests if "admin" not in name else max(2, args.requests // 10)
                with profiled(args, api, f"{size}-{name}"):
                    measured[name] = per_request(api, db, requests, count)
            figures["per_request"] = measured
            figures["load_average_sequential"] = load_average()
            set_target([api.url])
            timings = Timings()
            cpu = api.cpu_seconds()
            with db.tracked() as db_cpu:
                mix = read_mix(found["by_project"], args.clients, args.seconds, timings)
            mix["api_cpu_seconds"] = round(api.cpu_seconds() - cpu, 2)
            mix["database_cpu_seconds"] = round(db_cpu[0], 2)
            figures["under_clients"] = {**mix, **timings.summary()}
            figures["load_average_end"] = load_average()
            figures["api_rss_mb"] = api.rss_mb()
        finally:
            api.stop()
    return figures


def main() -> None:
    args = _args()
    if args.api_child:
        sys.exit(api_child())
    sizes = [int(s) for s in args.sizes.split(",")]
    out: dict[str, Any] = {"started": datetime.now().isoformat(timespec="seconds")}
    out["arguments"] = {k: v for k, v in vars(args).items() if k != "api_child"}
    with throwaway_database(args.admin_url) as url, tempfile.TemporaryDirectory() as tmp:
        settings = settings_for(url, Path(tmp))
        template = make_template(settings)
        have = 0
        for size in sizes:
            fill_seconds = fill(url, template, have + 1, size, args.projects)
            have = size
            out[str(size)] = {"fill_seconds": fill_seconds, **one_size(args, settings, size)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
