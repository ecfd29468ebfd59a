"""A rolling upgrade in the lab while clients are served (issue 35): shared by
``bench/upgrade.py`` and ``tests/e2e/lab/test_lab_upgrade.py``.

``upgrade_world`` builds a lab whose every process runs the old tree (``lab_world`` with
``code``), creates load balancers of each amphora topology the old code offers (SINGLE and
ACTIVE_STANDBY) and starts ``VipClient``: one process in the lab's client namespace that
starts a request every ``pause`` seconds, to each VIP in turn, each on a new connection
in a thread of its own (a request hanging on a dead VIP holds back no other).

``upgrade_steps`` lists the procedure, one process at a time: every host's agent, a
create and an update while agents and control plane differ, the schema's expansion
(``lbaas db upgrade``: the new code's processes refuse a schema that lacks their tables,
while the old code's ignore what they do not know), every control host's api, worker and
health (after the first control host, another create and update: a control plane of
both versions), then the schema's contraction when the code has one (``contract``). A
step is a name and a function: a list is easy to extend. ``run_steps`` runs them and
reads, for each, the longest time a VIP went unanswered and the requests that failed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lbaas.lab.base import LabError
from lbaas.lab.names import control_name
from lbaas.lab.upgrade import (
    STOP_GRACE,
    Restart,
    processes_in_order,
    restart_with_code,
    upgrade_schema,
)
from lbaas.model.enums import LIVE_AMPHORA_STATUSES, ProvisioningStatus
from tests.e2e.lab.lab_api import V2
from tests.support.lab_pair import LabWorld, create_pair, create_single, vip_of

#: After each step, the client goes on this long before the step's window closes: a
#: failure the step caused but that shows late is still the step's.
SETTLE = 2.0
#: How long the load balancers have to leave PENDING_* at the end.
PENDING_WAIT = 60.0

# One request every ``pause`` seconds, to each address in turn; one line per request:
# start, end (CLOCK_MONOTONIC, shared by every process), address, and the body or "".
_LOOP = r"""
import http.client, sys, threading, time, urllib.request
addresses = sys.argv[1].split(",")
timeout, pause, limit = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
lock = threading.Lock()
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no *_proxy variables
def one(address):
    started, body = time.monotonic(), ""
    try:  # urllib asks for "Connection: close": a new connection each time
        with direct.open(f"http://{address}:80/", timeout=timeout) as response:
            body = response.read().decode().strip() if response.status == 200 else ""
    except (OSError, ValueError, http.client.HTTPException):
        pass
    with lock:
        print(f"{started:.6f}\t{time.monotonic():.6f}\t{address}\t{body}", flush=True)
end = time.monotonic() + limit
next_at, turn = time.monotonic(), 0
while time.monotonic() < end:
    threading.Thread(target=one, args=(addresses[turn % len(addresses)],), daemon=True).start()
    turn += 1
    next_at += pause
    time.sleep(max(0.0, next_at - time.monotonic()))
"""


@dataclass(frozen=True)
class Request:
    started: float
    ended: float
    address: str
    answered: bool


@dataclass
class VipClient:
    """Requests to every VIP in turn from the lab's client namespace; ``requests`` fills
    as they end. Used as a context manager: the process is killed on leaving."""

    namespace: str
    addresses: list[str]
    pause: float = 0.01
    timeout: float = 0.5
    limit: float = 3600.0
    requests: list[Request] = field(default_factory=list)
    _process: subprocess.Popen[str] | None = None
    _reader: threading.Thread | None = None

    def __enter__(self) -> VipClient:
        argv = [sys.executable, "-c", _LOOP, ",".join(self.addresses)]
        argv += [str(self.timeout), str(self.pause), str(self.limit)]
        self._process = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, *argv], stdout=subprocess.PIPE, text=True
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            started, ended, address, body = line.rstrip("\n").split("\t", 3)
            self.requests.append(Request(float(started), float(ended), address, bool(body)))

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self._process is not None and self._process.stdout is not None:
            self._process.stdout.close()

    @property
    def cycle(self) -> float:
        """How often each VIP is asked when nothing fails: the shortest possible gap."""
        return self.pause * len(self.addresses)

    def failed(self, start: float, end: float) -> int:
        return sum(1 for r in list(self.requests) if start <= r.started < end and not r.answered)

    def failures(self, start: float, end: float, limit: int = 10) -> list[dict[str, Any]]:
        """The first ``limit`` failed requests started in [start, end): when (from
        ``start``), to which VIP, how long they took."""
        failed = sorted(
            (r for r in list(self.requests) if start <= r.started < end and not r.answered),
            key=lambda r: r.started,
        )
        wall = time.time() - time.monotonic()  # CLOCK_MONOTONIC to the logs' wall clock
        return [
            {
                "at_s": round(r.started - start, 3),
                "at": _clock(r.started + wall),
                "vip": r.address,
                "took_s": round(r.ended - r.started, 3),
            }
            for r in failed[:limit]
        ]

    def longest_gap(self, start: float, end: float) -> float:
        """The longest time any VIP went without an answered request around [start, end):
        between the starts of two answered requests, with the last before ``start`` and
        the first after ``end``."""
        longest = 0.0
        for address in self.addresses:
            answered = sorted(
                r.started for r in list(self.requests) if r.address == address and r.answered
            )
            before = [t for t in answered if t < start][-1:]
            after = [t for t in answered if t >= end][:1]
            times = before + [t for t in answered if start <= t < end] + after
            gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
            longest = max([longest, *gaps])
        return longest

    def wait_answered(self, timeout: float = 60.0) -> None:
        """Until every VIP has answered since this call (the client is up)."""
        since = time.monotonic()
        deadline = since + timeout
        while time.monotonic() < deadline:
            seen = {r.address for r in list(self.requests) if r.started >= since and r.answered}
            if seen >= set(self.addresses):
                return
            time.sleep(0.1)
        raise AssertionError(f"not every VIP answered within {timeout:.0f}s")


def _clock(wall: float) -> str:
    """HH:MM:SS.mmm (UTC), as the lab's logs write time."""
    return time.strftime("%H:%M:%S", time.gmtime(wall)) + f".{int(wall % 1 * 1000):03d}"


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[], object]


def create_load_balancers(world: LabWorld, per_topology: int) -> dict[str, list[str]]:
    """``per_topology`` SINGLE and ACTIVE_STANDBY load balancers, all ACTIVE; ids by kind.
    No pair with one host: its amphorae need two (anti-affinity)."""
    pairs = per_topology if world.lab.state().hosts > 1 else 0
    made = {
        "single": [create_single(world, f"single-{i}") for i in range(per_topology)],
        "active_standby": [create_pair(world, f"pair-{i}") for i in range(pairs)],
    }
    for ids in made.values():
        for lb_id in ids:
            world.api.wait_active(lb_id)
    return made


def vips(world: LabWorld, made: dict[str, list[str]]) -> list[str]:
    return [vip_of(world, lb_id) for ids in made.values() for lb_id in ids]


def create_and_update(world: LabWorld, made: dict[str, list[str]], label: str) -> None:
    """A create and an update through the API, each waited ACTIVE (a mixed deployment)."""
    lb_id = create_single(world, f"mixed-{label}")
    made.setdefault("mixed", []).append(lb_id)
    world.api.wait_active(lb_id)
    target = made["single"][0]
    body = {"loadbalancer": {"description": f"updated while {label}"}}
    world.api.call("PUT", f"{V2}/loadbalancers/{target}", body)
    world.api.wait_active(target)


def upgrade_steps(
    world: LabWorld,
    new: str,
    made: dict[str, list[str]],
    *,
    contract: Sequence[str] | None = None,
    grace: float = STOP_GRACE,
    control_first: bool = False,
) -> list[Step]:
    """The procedure's steps (see the module's docstring); ``contract``: the options of the
    schema's contraction (``lbaas db upgrade <contract>``), None while the code has none;
    ``grace``: SIGTERM to SIGKILL for each process stopped (0: SIGKILL); ``control_first``:
    the schema and the control plane before the agents (a new control plane driving old
    agents: the wire's other direction)."""
    lab = world.lab

    def restart(owner: str, part: str) -> Step:
        return Step(
            f"{owner}/{part}", lambda: restart_with_code(lab, owner, part, new, grace=grace)
        )

    order = processes_in_order(lab)
    agents = [restart(o, p) for o, p in order if not o.startswith("ctl")]
    controls = [restart(o, p) for o, p in order if o.startswith("ctl")]
    first_control = [s for s in controls if s.name.startswith(f"{control_name(1)}/")]
    later = controls[len(first_control) :]
    schema = Step("schema: expand", lambda: upgrade_schema(lab, new))
    control_plane = [*first_control]
    if later:
        label = "control plane"
        control_plane.append(Step(f"mixed: {label}", lambda: create_and_update(world, made, label)))
        control_plane += later
    if control_first:
        label = "old agents"
        mixed = Step(f"mixed: {label}", lambda: create_and_update(world, made, label))
        steps = [schema, *control_plane, mixed, *agents]
    else:
        mixed = Step("mixed: new agents", lambda: create_and_update(world, made, "agents"))
        steps = [*agents, mixed, schema, *control_plane]
    if contract is not None:
        steps.append(Step("schema: contract", lambda: upgrade_schema(lab, new, contract)))
    return steps


def run_steps(client: VipClient, steps: Sequence[Step]) -> Iterator[dict[str, Any]]:
    """Each step run while ``client`` is served; its figures as it ends."""
    for step in steps:
        start = time.monotonic()
        error, done = "", None
        wall = time.time()
        try:
            done = step.run()
        except (LabError, AssertionError, OSError, subprocess.SubprocessError) as exc:
            # Recorded, not raised: the figures so far and the final statuses still count.
            error = f"{type(exc).__name__}: {exc}"
        took = time.monotonic() - start
        time.sleep(SETTLE)
        end = time.monotonic()
        figures: dict[str, Any] = {
            "step": step.name,
            "started": time.strftime("%H:%M:%S", time.gmtime(wall)),
            "seconds": round(took, 3),
            "longest_gap_s": round(client.longest_gap(start, end), 3),
            "failed_requests": client.failed(start, end),
        }
        if isinstance(done, Restart):
            figures |= {"stop_s": round(done.stop_s, 3), "start_s": round(done.start_s, 3)}
        if figures["failed_requests"]:
            figures["failures"] = client.failures(start, end)
        if error:
            figures["error"] = error[-3000:]
        yield figures
        if error:
            return


def amphora_ids(world: LabWorld) -> set[str]:
    """The live amphorae's ids: those the upgrade rebuilt are missing afterwards."""
    amphorae = world.api.call("GET", "/v2/octavia/amphorae")["amphorae"]
    return {str(a["id"]) for a in amphorae if a["status"] in LIVE_AMPHORA_STATUSES}


def final_statuses(world: LabWorld, made: dict[str, list[str]]) -> dict[str, Any]:
    """After the upgrade: how many are still PENDING (once ``PENDING_WAIT`` has passed),
    how many ACTIVE and ONLINE, of how many."""
    ids = [lb_id for kind in made.values() for lb_id in kind]

    def listed() -> list[dict[str, Any]]:
        found = world.api.call("GET", f"{V2}/loadbalancers")["loadbalancers"]
        return [lb for lb in found if lb["id"] in ids]

    deadline = time.monotonic() + PENDING_WAIT
    while True:
        now = listed()
        pending = [lb for lb in now if lb["provisioning_status"].startswith("PENDING")]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    active = [lb for lb in now if lb["provisioning_status"] == ProvisioningStatus.ACTIVE]
    return {
        "load_balancers": len(ids),
        "pending_left": len(pending),
        "active": len(active),
        "online": sum(1 for lb in now if lb["operating_status"] == "ONLINE"),
        "not_active": {lb["id"]: lb["provisioning_status"] for lb in now if lb not in active},
    }


def keep_logs(world: LabWorld, destination: Path) -> None:
    """Copy the lab's process logs (``*.log`` below its services directory) to
    ``destination`` before ``down`` removes them."""
    for log in world.lab.services_dir.rglob("*.log"):
        target = destination / log.relative_to(world.lab.services_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, target)
