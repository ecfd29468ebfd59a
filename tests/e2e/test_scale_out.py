"""The parts run separately against PostgreSQL: ``lbaas db upgrade``, ``lbaas api`` × 2 and
``lbaas worker``, as a scale-out deployment would run them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic.script import ScriptDirectory

from lbaas.db.schema_check import MIGRATIONS
from tests.e2e.conftest import free_port
from tests.support.processes import lbaas_env, lbaas_process
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
SUBNET = "7f000a00-0000-4000-8000-000000000001"


def newest_migration() -> str:
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    assert head is not None
    return head


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_api_and_worker_processes_share_postgres(postgres: Any, tmp_path: Path) -> None:
    url = postgres.create("scale_out")
    base = {
        "state_dir": str(tmp_path / "state"),
        "database": {"url": url},
        "providers": {"enabled": ["noop"], "default": "noop"},
        "worker": {"poll_interval": 0.1},
    }
    upgrade = subprocess.run(
        [sys.executable, "-m", "lbaas.cli", "db", "upgrade"],
        env=lbaas_env(base),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert upgrade.returncode == 0, upgrade.stderr
    # The newest migration, whatever its number: the schema is at head.
    assert f"revision {newest_migration()}" in upgrade.stdout
    ports = [free_port(), free_port()]
    apis = [f"http://127.0.0.1:{p}" for p in ports]
    with (
        lbaas_process(["api"], lbaas_env({**base, "api": {"port": ports[0]}}), tmp_path / "a1.log"),
        lbaas_process(["api"], lbaas_env({**base, "api": {"port": ports[1]}}), tmp_path / "a2.log"),
        lbaas_process(["worker"], lbaas_env(base), tmp_path / "w.log"),
    ):
        for api in apis:
            wait_until(lambda api=api: _answers(api), 60, f"{api} to answer")
        created = []
        for n, api in enumerate(apis * 3):
            body = {"loadbalancer": {"name": f"so{n}", "vip_subnet_id": SUBNET}}
            r = httpx.post(f"{api}/v2/lbaas/loadbalancers", json=body, timeout=10)
            assert r.status_code == 201, r.text
            created.append(r.json()["loadbalancer"]["id"])

        def all_active() -> bool:
            lbs = httpx.get(f"{apis[1]}/v2/lbaas/loadbalancers", timeout=10).json()
            states = {lb["id"]: lb["provisioning_status"] for lb in lbs["loadbalancers"]}
            return all(states.get(i) == "ACTIVE" for i in created)

        wait_until(all_active, 60, "all ACTIVE through either API")
        addresses = {
            httpx.get(f"{apis[0]}/v2/lbaas/loadbalancers/{i}", timeout=10).json()["loadbalancer"][
                "vip_address"
            ]
            for i in created
        }
        assert len(addresses) == len(created), "no VIP address handed out twice"


def test_a_worker_on_another_host_is_woken_by_notify(postgres: Any, tmp_path: Path) -> None:
    """API and worker share nothing but PostgreSQL (separate state directories, so no
    wake-up socket reaches the worker) and the worker polls only once a minute: a load
    balancer still goes ACTIVE at once, because the enqueue's NOTIFY wakes the worker."""
    url = postgres.create("notify_e2e")
    common = {
        "database": {"url": url},
        "providers": {"enabled": ["noop"], "default": "noop"},
        "worker": {"poll_interval": 60},
    }
    api_env = lbaas_env({**common, "state_dir": str(tmp_path / "api-host")})
    worker_env = lbaas_env({**common, "state_dir": str(tmp_path / "worker-host")})
    upgrade = subprocess.run(
        [sys.executable, "-m", "lbaas.cli", "db", "upgrade"],
        env=api_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert upgrade.returncode == 0, upgrade.stderr
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    with (
        lbaas_process(["worker"], worker_env, tmp_path / "w.log"),
        lbaas_process(
            ["api"],
            lbaas_env({**common, "state_dir": str(tmp_path / "api-host"), "api": {"port": port}}),
            tmp_path / "a.log",
        ),
    ):
        wait_until(lambda: _answers(api), 60, "the API to answer")
        wait_until(lambda: "running" in (tmp_path / "w.log").read_text(), 60, "the worker to start")
        # The worker's first look for work happened at start; from now on only NOTIFY
        # (or the poll a minute later) can wake it.
        for n in range(3):
            body = {"loadbalancer": {"name": f"n{n}", "vip_subnet_id": SUBNET}}
            r = httpx.post(f"{api}/v2/lbaas/loadbalancers", json=body, timeout=10)
            assert r.status_code == 201, r.text
            lb_id = r.json()["loadbalancer"]["id"]

            def active(lb_id: str = lb_id) -> bool:
                got = httpx.get(f"{api}/v2/lbaas/loadbalancers/{lb_id}", timeout=10).json()
                return bool(got["loadbalancer"]["provisioning_status"] == "ACTIVE")

            wait_until(active, 20, f"load balancer {n} ACTIVE without waiting for the poll")
