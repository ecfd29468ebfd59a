"""Where the tier's nodes renew their leases: one SQLite file every node and the watcher open.

A renewal is one row per node with the wall-clock time of its last renewal (nodes and the
watcher share a clock in the lab; in production this would be the control plane's database,
whose clock is the only one that counts). The file is opened read-write and never created
by a reader: a store that is gone (moved away, its disk lost) is an outage, reported as
``LeaseStoreUnavailable``, never silently replaced by an empty one.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Protocol

from lbaas.config import TierSettings

_TIMEOUT = TierSettings().lease_store_timeout  # tier.lease_store_timeout's default


class LeaseStoreUnavailable(Exception):
    """The lease store cannot be read or written (an outage)."""


class LeaseReader(Protocol):
    """What status and metrics read: node -> wall time of its last renewal (this file, or
    ``lbaas.tier.coordinated_leases.CoordinatedLeaseReader``)."""

    def read(self) -> dict[str, float]: ...


class SqliteLeaseStore:
    def __init__(self, path: Path, timeout: float = _TIMEOUT) -> None:
        self.path = path
        self.timeout = timeout  # seconds a call waits for a busy file before failing

    def create(self) -> None:
        """Make the store (the operator's or lab's step, not a node's)."""
        with sqlite3.connect(self.path) as db:
            db.execute("create table if not exists lease (node text primary key, renewed real)")

    def _connect(self) -> sqlite3.Connection:
        try:
            return sqlite3.connect(f"file:{self.path}?mode=rw", uri=True, timeout=self.timeout)
        except sqlite3.Error as exc:
            raise LeaseStoreUnavailable(f"{self.path}: {exc}") from exc

    def renew(self, node: str) -> None:
        db = self._connect()
        try:
            with db:
                db.execute(
                    "insert into lease values (?, ?) on conflict(node) do update set renewed = ?",
                    (node, time.time(), time.time()),
                )
        except sqlite3.Error as exc:
            raise LeaseStoreUnavailable(f"{self.path}: {exc}") from exc
        finally:
            db.close()

    def read(self) -> dict[str, float]:
        """Every node's last renewal (wall-clock seconds)."""
        db = self._connect()
        try:
            return {node: renewed for node, renewed in db.execute("select * from lease")}
        except sqlite3.Error as exc:
            raise LeaseStoreUnavailable(f"{self.path}: {exc}") from exc
        finally:
            db.close()
