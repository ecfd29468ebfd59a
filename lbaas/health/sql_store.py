"""The health store on lbaas's database (``HealthStore`` over ``lbaas.db``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import UTC, datetime

from lbaas.db import health_repo, status_writer
from lbaas.db.engine import Database
from lbaas.db.graph_loader import load_graph
from lbaas.health.counters import CounterRecord
from lbaas.health.rollup import OperatingStatuses
from lbaas.health.store import AmphoraHeartbeat, CounterUpdate, HealthStore
from lbaas.model.graph import AmphoraId, ListenerId, LoadBalancer, LoadBalancerId
from lbaas.model.health import ListenerCounters


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _counters(raw: Mapping[str, int]) -> ListenerCounters:
    return ListenerCounters(
        **{k: int(v) for k, v in raw.items() if k in ListenerCounters.__dataclass_fields__}
    )


class SqlHealthStore(HealthStore):
    def __init__(self, database: Database, notify: Callable[[], None] = lambda: None) -> None:
        self._db = database
        # Wakes the workers once a failover job is committed (they would poll it anyway).
        self._notify = notify

    def record_heartbeat(
        self, amphora_id: AmphoraId, loadbalancer_id: LoadBalancerId, received_at: float
    ) -> bool:
        with self._db.write() as session:
            return health_repo.record_heartbeat(session, amphora_id, loadbalancer_id, received_at)

    def load_graph(self, loadbalancer_id: LoadBalancerId) -> LoadBalancer | None:
        with self._db.read_connection() as conn:
            return load_graph(conn, loadbalancer_id)

    def update_listener_counters(
        self, amphora_id: AmphoraId, loadbalancer_id: LoadBalancerId, update: CounterUpdate
    ) -> None:
        with self._db.write() as session:
            rows = health_repo.lock_counters(session, amphora_id)
            current = {
                ListenerId(r.listener_id): CounterRecord(
                    epoch=r.epoch, base=_counters(r.base), last=_counters(r.last)
                )
                for r in rows
            }
            for listener_id, record in update(current).items():
                health_repo.put_counters(
                    session,
                    amphora_id,
                    loadbalancer_id,
                    listener_id,
                    record.epoch,
                    asdict(record.base),
                    asdict(record.last),
                )

    def apply_operating_statuses(
        self, loadbalancer_id: LoadBalancerId, statuses: OperatingStatuses
    ) -> bool:
        with self._db.write() as session:
            if not health_repo.loadbalancer_is_settled(session, loadbalancer_id):
                return False
            status_writer.apply_operating_statuses(session, statuses.by_kind(), _now())
            return True

    def list_amphora_heartbeats(self) -> list[AmphoraHeartbeat]:
        with self._db.read() as session:
            return [
                AmphoraHeartbeat(AmphoraId(a), LoadBalancerId(lb), seen)
                for a, lb, seen in health_repo.heartbeating_amphorae(session)
            ]

    def request_failover(self, amphora_id: AmphoraId) -> bool:
        with self._db.write() as session:
            requested = health_repo.request_failover(session, amphora_id, _now())
        if requested:
            self._notify()
        return requested
