"""SINGLE create and failover through ``lbaas serve`` in netns mode, with or without spares:
the ``single`` measurement of ``bench/failover.py`` (root; ``--spares N``, ``--trials N``).

One ``lbaas serve`` (netns mode, ``agent.spare_amphorae = --spares``; health's
``stale_after`` long, so nothing fails over by itself) with a VIP subnet of its own; the
host holds the subnet's gateway address on the VIP bridge and serves the member there
(an HTTP server bound to that address only). Per trial:

- ``create``: POST a load balancer with an HTTP listener and a pool with that member;
  seconds until the API says ACTIVE (polled every 10 ms), and until the VIP first answers
  200 from the host;
- ``failover``: a client loops GETs through the VIP (every 10 ms, a new connection each,
  0.5 s timeout) while ``PUT .../failover`` runs; seconds from the PUT until the load
  balancer is ACTIVE again, and until the VIP answers again after its gap, if it had
  one; ``outage_s`` is the gap itself (first failed request to first answered one after
  it), 0 when none failed (the new amphora is built while the old one serves, and
  takes the VIP over once it serves); ``failed_requests``: how many failed.

Between trials the pool is given time to refill (``--refill-wait``). Nothing asserts on
time. Target (issue 35, with spares): SINGLE failover <= 0.5 s.
"""

from __future__ import annotations

import argparse
import http.client
import ipaddress
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import running_serve
from tests.support.scratch_subnets import pick_subnets

PORT = 8080
MEMBER_PORT = 8000
POLL = 0.01


class _Member(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        return None


def _get(address: str, timeout: float = 0.5) -> bool:
    connection = http.client.HTTPConnection(address, PORT, timeout=timeout)
    try:
        connection.request("GET", "/")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


class _Loop:
    """GETs through ``address`` every 10 ms in a thread: (start, end, answered) each."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.record: list[tuple[float, float, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            ok = _get(self.address)
            self.record.append((started, time.monotonic(), ok))
            self._stop.wait(POLL)

    def __enter__(self) -> _Loop:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def answered_after(self, since: float) -> bool:
        return any(ok and started > since for started, _, ok in list(self.record))

    def failed_between(self, since: float, until: float) -> int:
        return sum(1 for started, _, ok in list(self.record) if since <= started < until and not ok)

    def back_after(self, since: float) -> tuple[float, float] | None:
        """(end of the first answered request after the first failure since ``since``,
        start of that failure), or None."""
        failed_at = None
        for started, ended, ok in list(self.record):
            if started < since:
                continue
            if not ok and failed_at is None:
                failed_at = started
            if ok and failed_at is not None:
                return ended, failed_at
        return None


def _wait(condition: Any, timeout: float = 120.0) -> float:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise TimeoutError("condition not met")
        time.sleep(POLL)
    return time.monotonic()


def _status(api: OctaviaApi, lb_id: str) -> str:
    return str(api.loadbalancer(lb_id)["provisioning_status"])


def _create(api: OctaviaApi, subnet_id: str, member: str) -> tuple[dict[str, Any], float]:
    pool = {
        "name": "members",
        "protocol": "HTTP",
        "lb_algorithm": "ROUND_ROBIN",
        "members": [{"address": member, "protocol_port": MEMBER_PORT}],
    }
    listener = {"protocol": "HTTP", "protocol_port": PORT, "default_pool": pool}
    body = {"loadbalancer": {"vip_subnet_id": subnet_id, "listeners": [listener]}}
    started = time.monotonic()
    response = api.http.post("/v2/lbaas/loadbalancers", json=body)
    assert response.status_code == 201, response.text
    return response.json()["loadbalancer"], started


def _one_trial(api: OctaviaApi, subnet_id: str, member: str) -> dict[str, float]:
    lb, started = _create(api, subnet_id, member)
    active = _wait(lambda: _status(api, lb["id"]) == "ACTIVE")
    served = _wait(lambda: _get(lb["vip_address"]))
    with _Loop(lb["vip_address"]) as loop:
        time.sleep(0.3)
        put = time.monotonic()
        api.failover(lb["id"])
        time.sleep(POLL)
        again = _wait(lambda: _status(api, lb["id"]) == "ACTIVE")
        # Answered after ACTIVE: every request of the failover has ended by then.
        settled = _wait(lambda: loop.answered_after(again))
        back = loop.back_after(put)
        failed = loop.failed_between(put, settled)
    figures = {
        "create_active_s": active - started,
        "create_served_s": served - started,
        "failover_active_s": again - put,
        "failover_served_s": 0.0,  # never stopped answering (the old amphora served on)
        "outage_s": 0.0,
        "failed_requests": float(failed),
    }
    if back is not None:
        figures |= {"failover_served_s": back[0] - put, "outage_s": back[0] - back[1]}
    return figures


@contextmanager
def _member_on(address: str) -> Iterator[None]:
    server = ThreadingHTTPServer((address, MEMBER_PORT), _Member)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def _summary(samples: list[float]) -> dict[str, Any]:
    return {
        "p50": round(statistics.median(samples), 3),
        "max": round(max(samples), 3),
        "samples": [round(s, 3) for s in samples],
    }


def single_failover(args: argparse.Namespace) -> dict[str, Any]:
    """The ``single`` measurement of ``bench/failover.py``."""
    trials = 2 if args.quick else args.single_trials
    (net,) = pick_subnets(1)
    gateway = str(ipaddress.ip_network(net)[1])
    subnet = {
        "id": str(uuid.uuid4()),
        "network_id": str(uuid.uuid4()),
        "cidr": str(net),
        "name": "bench-single",
        "gateway_ip": gateway,
    }
    settings = {
        "agent": {"mode": "netns", "spare_amphorae": args.spares},
        "network": {"subnets": [subnet]},
        "health": {"stale_after": 60.0},
    }
    rows: list[dict[str, float]] = []
    with running_serve(settings, prefix="lbs-") as serve, serve.api() as api:
        first, _ = _create(api, subnet["id"], gateway)  # makes the bridge and its address
        _wait(lambda: _status(api, first["id"]) == "ACTIVE")
        with _member_on(gateway):
            for _ in range(trials):
                time.sleep(args.refill_wait)
                rows.append(_one_trial(api, subnet["id"], gateway))
        api.delete_all_loadbalancers(120)
        taken = serve.log.read_text(errors="replace").count(" took spare ")
    return {
        "spare_amphorae": args.spares,
        "spares_taken": taken,
        "trials": trials,
        **{key: _summary([row[key] for row in rows]) for key in rows[0]},
    }
