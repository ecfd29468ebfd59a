"""A lab client that keeps changing load balancers through several APIs (run in a namespace).

``python control_client.py SECONDS API[,API…] LB_ID…``: one thread per load balancer, for
SECONDS: PUT a new description through the next API (round robin), then GET it through the
next APIs until it is ACTIVE again, and again. Every call's outcome is counted; what it
prints (JSON) is the calls, the failures (anything but 2xx, or no answer, with the API),
the longest time from a PUT to ACTIVE and the longest gap between two answered calls.
Standard library only: it starts inside ``<lab>-cli`` where nothing else is needed.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Any

V2 = "/v2/lbaas/loadbalancers/"
TIMEOUT = 10.0
#: Seconds after its PUT a load balancer may take to be ACTIVE again before the client
#: gives it up as stuck (the test then fails naming it, instead of waiting out its timeout).
STUCK = 90.0


class Calls:
    def __init__(self, apis: list[str]) -> None:
        self._next = itertools.cycle(apis)
        self._lock = threading.Lock()
        self.count = 0
        self.failures: list[str] = []
        self.last_answer = time.monotonic()
        self.longest_gap = 0.0
        self.longest_converge = 0.0

    def api(self) -> str:
        with self._lock:
            return next(self._next)

    def call(self, method: str, lb_id: str, body: dict[str, Any] | None = None) -> Any:
        api = self.api()
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{api}{V2}{lb_id}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
                result = json.loads(answer.read() or b"null")
        except (urllib.error.URLError, OSError, ValueError) as exc:
            with self._lock:
                self.count += 1
                self.failures.append(f"{method} {api}: {exc}")
            return None
        now = time.monotonic()
        with self._lock:
            self.count += 1
            self.longest_gap = max(self.longest_gap, now - self.last_answer)
            self.last_answer = now
        return result


def change(calls: Calls, lb_id: str, until: float) -> None:
    version = 0
    while time.monotonic() < until:
        version += 1
        sent = time.monotonic()
        if calls.call("PUT", lb_id, {"loadbalancer": {"description": f"v{version}"}}) is None:
            time.sleep(0.2)
            continue
        while True:
            shown = calls.call("GET", lb_id)
            if shown is not None and shown["loadbalancer"]["provisioning_status"] == "ACTIVE":
                break
            if time.monotonic() - sent > STUCK:  # a failure the test names, not a hang
                status = None if shown is None else shown["loadbalancer"]["provisioning_status"]
                with calls._lock:
                    calls.failures.append(f"{lb_id} not ACTIVE {STUCK:g}s after PUT: {status}")
                return
            time.sleep(0.1)
        with calls._lock:
            calls.longest_converge = max(calls.longest_converge, time.monotonic() - sent)


def main(seconds: float, apis: list[str], ids: list[str]) -> int:
    calls = Calls(apis)
    until = time.monotonic() + seconds
    threads = [threading.Thread(target=change, args=(calls, i, until)) for i in ids]
    for thread in threads:
        thread.start()
    print("started", file=sys.stderr, flush=True)
    for thread in threads:
        thread.join()
    figures = {
        "calls": calls.count,
        "failures": calls.failures,
        "longest_gap_s": round(calls.longest_gap, 3),
        "longest_converge_s": round(calls.longest_converge, 3),
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1]), sys.argv[2].split(","), sys.argv[3:]))
