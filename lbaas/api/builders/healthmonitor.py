"""Health monitor rows from requests: create (POST and graph create) and update."""

from __future__ import annotations

from datetime import datetime

from lbaas.api.builders.common import add_new_row, apply_sent, new_object_columns
from lbaas.api.capabilities import require_capability
from lbaas.api.schemas.healthmonitor import HealthMonitorSingleCreate, HealthMonitorUpdate
from lbaas.api.services import ApiServices
from lbaas.api.validation import healthmonitor as rules
from lbaas.api.validation import operator_policy as policy
from lbaas.db import table_rows
from lbaas.db.listing import set_tags
from lbaas.db.session import Session
from lbaas.db.tables import HealthMonitorRow, LoadBalancerRow, PoolRow
from lbaas.errors import Conflict


def build_healthmonitor(
    session: Session,
    services: ApiServices,
    pool: PoolRow,
    data: HealthMonitorSingleCreate,
    now: datetime,
) -> HealthMonitorRow:
    """Validate a pool's new health monitor and add it (PENDING_CREATE, OFFLINE).

    409 if the pool already has one. No lock, quota, job or notification here.
    """
    hm_type = data.type.value
    lb = session.get(LoadBalancerRow, pool.loadbalancer_id)
    if lb is not None:
        require_capability(
            services, lb.provider, "health monitor type", data.type, "health_monitor_types"
        )
    policy.check_monitor_type(services.settings.api, hm_type)
    rules.check_type_for_pool(hm_type, pool.protocol)
    rules.check_udp_connect_delay(hm_type, data.delay, _udp_connect_minimum(services))
    http = rules.http_fields_on_create(
        hm_type,
        {
            "http_method": data.http_method.value if data.http_method else None,
            "url_path": data.url_path,
            "expected_codes": data.expected_codes,
        },
    )
    rules.check_domain_name(data.domain_name, data.http_version)
    if table_rows.count_rows(session, HealthMonitorRow, HealthMonitorRow.pool_id == pool.id):
        raise Conflict("This pool already has a health monitor")
    row = HealthMonitorRow(
        **new_object_columns(pool.project_id, now, data=data),
        pool_id=pool.id,
        name=data.name,
        admin_state_up=data.admin_state_up,
        type=hm_type,
        delay=data.delay,
        timeout=data.timeout,
        max_retries=data.max_retries,
        max_retries_down=data.max_retries_down,
        http_method=http["http_method"],
        url_path=http["url_path"],
        expected_codes=http["expected_codes"],
        http_version=data.http_version,
        domain_name=data.domain_name,
    )
    return add_new_row(session, row, data.tags, flush=False)


def apply_healthmonitor_update(
    session: Session, services: ApiServices, row: HealthMonitorRow, data: HealthMonitorUpdate
) -> None:
    """Apply a PUT body to a locked monitor row (its checks ran before the lock)."""
    apply_sent(
        row, data, ("name", "delay", "timeout", "max_retries", "http_version", "domain_name")
    )
    if data.given("max_retries_down"):
        down = data.max_retries_down
        row.max_retries_down = rules.DEFAULT_MAX_RETRIES_DOWN if down is None else down
    if data.given("http_method"):
        method = data.http_method.value if data.http_method else None
        row.http_method = method or rules.HTTP_DEFAULTS["http_method"]
    if data.given("url_path"):
        row.url_path = data.url_path or rules.HTTP_DEFAULTS["url_path"]
    if data.given("expected_codes"):
        row.expected_codes = data.expected_codes or rules.HTTP_DEFAULTS["expected_codes"]
    rules.check_domain_name(row.domain_name, row.http_version)
    rules.check_udp_connect_delay(row.type, row.delay, _udp_connect_minimum(services))
    if data.given("tags") and data.tags is not None:
        set_tags(session, row.id, data.tags)


def _udp_connect_minimum(services: ApiServices) -> int:
    return services.settings.api.udp_connect_min_interval_health_monitor
