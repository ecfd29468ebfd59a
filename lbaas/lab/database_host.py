"""The lab's database host: one PostgreSQL in ``<lab>-db`` for several control hosts.

A lab with ``--control K`` (K > 1) runs its control plane on K hosts that share nothing but
the network, so their one database is a server on a host of its own, reached over the
fabric as real control hosts reach theirs: not the machine's PostgreSQL (the lab makes
nothing in the machine's own network namespace, and that server listens on its loopback),
and not a file. It is Debian's PostgreSQL (``/usr/lib/postgresql/<version>/bin``), a fresh
cluster per lab: ``initdb`` into ``/run/lbaas-lab-db/<lab>`` (owned by ``postgres``, which
cannot enter the lab's private state directory; the database host's own, hidden from the
other hosts like its log directory ``<services_dir>/db``), then ``postgres`` listening on the
database host's fabric address only, trusting the fabric's /24 (the lab's own network) and
tuned for a throwaway cluster (no fsync), with ``pg_stat_statements`` preloaded so a bench
can read the slowest statements there (``bench/scale.py --lab``). Started under ``setpriv`` as ``postgres`` (it
execs, so the registered pid is the server's); ``down`` removes the data directory.
"""

from __future__ import annotations

import pwd
import shutil
from pathlib import Path

from lbaas.lab import processes
from lbaas.lab.addresses import DATABASE_HOST, address, bare
from lbaas.lab.base import LabError
from lbaas.lab.lab import Lab
from lbaas.private_files import make_private_directory

PORT = 5432
DATABASE = "lbaas"
USER = "lbaas"
OWNER = "db"
_POSTGRESQL = Path("/usr/lib/postgresql")
_START_TIMEOUT = 60.0
#: A throwaway cluster: durability off; enough connections for seven control hosts' pools.
_SERVER_SETTINGS = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
    "shared_buffers": "32MB",
    # Loaded at start (it cannot be later); ``CREATE EXTENSION`` makes its view readable.
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track_utility": "off",
}


def _binaries() -> Path:
    versions = sorted(
        (p for p in _POSTGRESQL.glob("*/bin") if (p / "postgres").exists()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if not versions:
        raise LabError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    return versions[-1]


def _empty_directory(data: Path) -> None:
    """Make ``data`` an empty directory, keeping it if it exists: it is the database
    host's own directory, bound into that host's mount namespace when the lab was built
    (``Lab.host_files``), so a new directory there would not be the one postgres sees.
    What it holds may be a lab's data from a crash before its ``down``."""
    data.mkdir(parents=True, exist_ok=True)
    for entry in data.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def database_address(lab: Lab) -> str:
    return bare(address(lab.state().networks["fab"], DATABASE_HOST))


def database_url(lab: Lab) -> str:
    """The URL every control host's processes use (``database.url``)."""
    return f"postgresql+psycopg://{USER}@{database_address(lab)}:{PORT}/{DATABASE}"


def start_database(lab: Lab) -> str:
    """A fresh PostgreSQL cluster on the database host, with database ``lbaas``; its URL."""
    binaries = _binaries()
    try:
        account = pwd.getpwnam("postgres")
    except KeyError as exc:
        raise LabError("no postgres user to run the lab's PostgreSQL as") from exc
    as_postgres = ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}"]
    as_postgres += ["--clear-groups", "--"]
    data = lab.names.database_dir
    _empty_directory(data)
    data.parent.chmod(0o711)  # postgres passes through to its own directory, lists nothing
    data.chmod(0o700)
    shutil.chown(data, account.pw_uid, account.pw_gid)
    namespace = lab.names.database
    initdb = [str(binaries / "initdb"), "-D", str(data), "-U", USER, "--auth=trust"]
    processes.run_to_end(namespace, [*as_postgres, *initdb, "-E", "UTF8", "--no-sync"])
    fabric = lab.state().networks["fab"]
    (data / "pg_hba.conf").write_text(f"local all all trust\nhost all all {fabric} trust\n")
    host = database_address(lab)
    argv = [str(binaries / "postgres"), "-D", str(data), "-c", f"listen_addresses={host}"]
    argv += ["-c", f"port={PORT}", "-c", f"unix_socket_directories={data}"]
    for key, value in _SERVER_SETTINGS.items():
        argv += ["-c", f"{key}={value}"]
    directory = lab.services_dir / OWNER
    make_private_directory(directory)
    log = directory / "postgres.log"
    pid = processes.start(namespace, [*as_postgres, *argv], log, directory)
    lab.register_process(OWNER, pid)
    processes.wait_listening(namespace, host, PORT, log, _START_TIMEOUT)
    createdb = [str(binaries / "createdb"), "-h", str(data), "-p", str(PORT), "-U", USER]
    processes.run_to_end(namespace, [*as_postgres, *createdb, DATABASE])
    return database_url(lab)
