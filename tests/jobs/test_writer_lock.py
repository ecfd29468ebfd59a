"""SQLite writers queue on one lock across Database handles (as across processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from sqlalchemy import text

from lbaas.db.engine import Database


def _url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'lock.sqlite'}"


def test_a_second_handle_writes_only_after_the_first_commits(tmp_path: Path) -> None:
    # Two Database objects hold two flocks on the same file, exactly as two processes do.
    first, second = Database(_url(tmp_path)), Database(_url(tmp_path))
    with first.write_connection() as conn:
        conn.execute(text("CREATE TABLE t (n INTEGER)"))
    order: list[str] = []
    first_holds = threading.Event()

    def hold() -> None:
        with first.write_connection() as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))
            first_holds.set()
            time.sleep(0.3)
            order.append("first commits")

    thread = threading.Thread(target=hold)
    thread.start()
    assert first_holds.wait(10)
    with second.write_connection() as conn:
        order.append("second writes")
        seen = conn.execute(text("SELECT count(*) FROM t")).scalar_one()
    thread.join()
    assert order == ["first commits", "second writes"]
    assert seen == 1  # the second writer saw the first one's committed row
    first.dispose()
    second.dispose()


def test_a_killed_writer_does_not_leave_the_lock_held(tmp_path: Path) -> None:
    database = Database(_url(tmp_path))
    with database.write_connection() as conn:
        conn.execute(text("CREATE TABLE t (n INTEGER)"))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from lbaas.db.engine import Database\n"
            "db = Database(sys.argv[1])\n"
            "with db.write_connection():\n"
            "    print('holding', flush=True)\n"
            "    time.sleep(600)\n",
            _url(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        with holder.stdout:
            assert holder.stdout.readline().strip() == "holding"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
        with database.write_connection() as conn:
            conn.execute(text("INSERT INTO t VALUES (1)"))
        with database.read_connection() as conn:
            assert conn.execute(text("SELECT count(*) FROM t")).scalar_one() == 1
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        database.dispose()
