"""The PostgreSQL of ``bench/scale.py``: a throw-away cluster of its own, or a database on
an existing server (``--admin-url``), and the figures read from it.

The own cluster is Debian's PostgreSQL 15 (``initdb`` and ``postgres`` from
``/usr/lib/postgresql/15/bin``) in a temporary directory: its Unix socket is in that
directory (reachable from the bench's network namespace, which has no route to the
machine's 127.0.0.1) and it listens on a free 127.0.0.1 port. It is started with
``shared_preload_libraries = 'pg_stat_statements'``, which a server others use cannot be
given without a restart, so the JSON gets the slowest statements at each size. Apart
from that library it keeps PostgreSQL's defaults (``fsync`` and ``synchronous_commit`` on,
128 MB of shared buffers, as the machine's own server). PostgreSQL refuses to run as
root: as root, both programs run as the ``postgres`` user through ``runuser``. The server
is stopped and its directory removed at the end, on failure too.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

PG_BIN = Path("/usr/lib/postgresql/15/bin")
SHARED_SOCKET_DIR = "/var/run/postgresql"  # the machine's server, for --admin-url
TOP = 10  # statements listed by total and by mean time
# Marks the bench's own statements (its polls), left out of the slowest: pg_stat_statements
# keeps a statement's leading comment in its text.
BENCH = "/* scale-bench */"
QUERY_CHARS = 160
# BEGIN/COMMIT/SET are left out: they would crowd the list without saying anything.
SETTINGS = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{sockets}'
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track_utility = off
max_connections = 200
log_min_messages = warning
"""


@dataclass(frozen=True)
class Server:
    """Where the bench's database lives: a Unix socket directory and a port."""

    socket_dir: str
    port: int
    admin_url: str = ""  # --admin-url: how the outer run creates and drops the database
    user: str = "postgres"  # the lab's database host: its superuser is "lbaas"

    def url(self, database: str, driver: str = "postgresql") -> str:
        return f"{driver}://{self.user}@/{database}?host={self.socket_dir}&port={self.port}"

    def connect(self, database: str) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url(database), autocommit=True)

    def admin(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.admin_url or self.url("postgres"), autocommit=True)


@dataclass(frozen=True)
class Db:
    """The run's database on its server."""

    server: Server
    name: str

    def connect(self) -> psycopg.Connection[Any]:
        return self.server.connect(self.name)

    def sqlalchemy_url(self) -> str:
        return self.server.url(self.name, "postgresql+psycopg")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(argv: list[str]) -> list[str]:
    """``argv`` run as the ``postgres`` user when we are root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return argv
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError("running as root needs a 'postgres' user for the own cluster") from None
    return ["runuser", "-u", "postgres", "--", *argv]


@contextmanager
def own_cluster() -> Iterator[Server]:
    """A fresh cluster for the run; stopped and removed whatever happens."""
    if not (PG_BIN / "initdb").exists():
        raise RuntimeError(f"no {PG_BIN}/initdb: install postgresql-15, or pass --admin-url")
    top = Path(tempfile.mkdtemp(prefix="scale-pg-", dir="/tmp"))
    server: subprocess.Popen[bytes] | None = None
    try:
        if os.geteuid() == 0:
            shutil.chown(top, "postgres", "postgres")
        data, port = top / "data", _free_port()
        subprocess.run(
            _as_postgres(
                [
                    str(PG_BIN / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                ]
            ),  # fmt: skip
            check=True,
            capture_output=True,
        )
        with open(data / "postgresql.conf", "a") as conf:
            conf.write(SETTINGS.format(port=port, sockets=top))
        with open(top / "server.log", "ab") as log:
            server = subprocess.Popen(
                _as_postgres([str(PG_BIN / "postgres"), "-D", str(data)]),
                stdout=log,
                stderr=log,
                start_new_session=True,  # a ^C of the bench reaches it through us, in order
            )
        found = Server(str(top), port)
        _wait_ready(found, server, top / "server.log")
        yield found
    finally:
        if server is not None:
            _stop(server)
        shutil.rmtree(top, ignore_errors=True)


def _wait_ready(found: Server, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"postgres exited: {log.read_text(errors='replace')[-2000:]}")
        with contextlib.suppress(psycopg.OperationalError), found.admin():
            return
        time.sleep(0.2)
    raise RuntimeError("postgres did not accept connections within 60 s")


def _stop(server: subprocess.Popen[bytes]) -> None:
    """Fast shutdown (SIGINT to the postmaster, through runuser's session); SIGKILL if
    it does not end."""
    if server.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, 2)  # SIGINT: PostgreSQL's fast shutdown
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, 9)
        server.wait(10)


def existing_server(admin_url: str) -> Server:
    """A server given by ``--admin-url``, reached over its Unix socket (the namespace has
    no route to its TCP port)."""
    port = psycopg.conninfo.conninfo_to_dict(admin_url).get("port") or 5432
    return Server(SHARED_SOCKET_DIR, int(port), admin_url)


@contextmanager
def server_for(admin_url: str) -> Iterator[Server]:
    """The server of ``admin_url``, or (empty) a throw-away cluster of the run's own."""
    if admin_url:
        yield existing_server(admin_url)
    else:
        with own_cluster() as server:
            yield server


@contextmanager
def database(server: Server, name: str) -> Iterator[Db]:
    """A database ``name`` for the run, dropped at the end."""
    with server.admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        yield Db(server, name)
    finally:
        with server.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def reset_statements(conn: psycopg.Connection[Any]) -> None:
    """Start pg_stat_statements' counts afresh (nothing when it is not loaded)."""
    with contextlib.suppress(psycopg.Error):
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute(f"{BENCH} SELECT pg_stat_statements_reset()")


def slowest_statements(conn: psycopg.Connection[Any]) -> Any:
    """The top statements of this database by total and by mean execution time, or why
    they are unavailable (a server without the library preloaded)."""
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return {order: _top(conn, order) for order in ("total", "mean")}
    except psycopg.Error as exc:
        return f"unavailable: {str(exc).splitlines()[0]}"


def _top(conn: psycopg.Connection[Any], order: str) -> list[dict[str, Any]]:
    rows = conn.execute(
        f"{BENCH} SELECT calls, mean_exec_time, total_exec_time, query FROM pg_stat_statements "
        f"WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        f"AND query NOT LIKE '{BENCH}%' ORDER BY {order}_exec_time DESC LIMIT {TOP}".encode()
    ).fetchall()
    return [
        {
            "calls": int(calls),
            "mean_ms": round(float(mean), 2),
            "total_ms": round(float(total), 1),
            "query": shorten(str(query)),
        }  # fmt: skip
        for calls, mean, total, query in rows
    ]


def shorten(query: str) -> str:
    """One line, at most QUERY_CHARS characters (the start says which statement)."""
    flat = " ".join(query.split())
    return flat if len(flat) <= QUERY_CHARS else flat[: QUERY_CHARS - 1] + "…"
