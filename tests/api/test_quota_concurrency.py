"""A quota holds when many clients of one project create at the same moment.

Real HTTP to a real uvicorn server, each client on its own connection and thread, so the
creates overlap inside the database as they do in production; on PostgreSQL they ran in
parallel transactions and each counted the others' uncommitted rows as absent.
"""

from __future__ import annotations

import threading

import httpx

from tests.support.api_client import LOOPBACK_SUBNET, Api

CLIENTS = 30
LIMIT = 5


def test_concurrent_creates_stop_exactly_at_the_quota(admin: Api, base_url: str) -> None:
    r = admin.put("/v2/lbaas/quotas/p-race", {"quota": {"loadbalancer": LIMIT}})
    assert r.status_code == 202, r.text
    headers = {"X-Project-Id": "p-race", "X-Roles": "member"}
    body = {"loadbalancer": {"vip_subnet_id": LOOPBACK_SUBNET}}
    start = threading.Barrier(CLIENTS)
    statuses: list[int] = []

    def create() -> None:
        with httpx.Client(base_url=base_url, headers=headers, timeout=60) as client:
            start.wait()
            statuses.append(client.post("/v2/lbaas/loadbalancers", json=body).status_code)

    threads = [threading.Thread(target=create) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201] * LIMIT + [403] * (CLIENTS - LIMIT)
    listed = admin.get("/v2/lbaas/loadbalancers", params={"project_id": "p-race"}).json()
    assert len(listed["loadbalancers"]) == LIMIT
