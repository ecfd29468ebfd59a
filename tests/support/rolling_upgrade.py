"""A rolling upgrade in the lab while clients are served (issue 35): shared by
``bench/upgrade.py`` and ``tests/e2e/lab/test_lab_upgrade.py``.

The caller builds a lab whose every process runs the old tree (``lab_world`` with
``code``); ``create_load_balancers`` makes load balancers of each amphora topology the old
code offers (SINGLE and ACTIVE_STANDBY) and of the distributed provider; ``vip_clients``
asks their VIPs (``tests.support.vip_client``): the lab's client namespace every VIP (a
distributed one enters through its entry node), each host the distributed ones (balanced
on that host, where a distributed load balancer's decision is taken).

``upgrade_steps`` lists the procedure, one process at a time. By default the control
plane first, as Octavia upgrades its control plane before its amphorae: the schema's
expansion (``lbaas db upgrade --expand``: the new code's processes refuse a schema that lacks their
tables, while the old code's ignore what they do not know), every control host's api,
worker and health (after the first control host, a create and an update: a control plane
of both versions), a create and an update through old agents, then every host's agent:
the new health manager judges the old agents' restarts. ``control_first=False``: the
agents, a create and an update, the schema, the control plane. Then the schema's
contraction (``lbaas db upgrade --contract``: 0011 drops an index only the release before
was planned with). A step is a name and a function: a list
is easy to extend. ``run_steps`` runs them and reads, for each, the longest time a VIP
went unanswered and the requests that failed, per provider too.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lbaas.lab.arguments import STOP_GRACE
from lbaas.lab.base import LabError
from lbaas.lab.names import control_name
from lbaas.lab.upgrade import (
    Restart,
    processes_in_order,
    restart_with_code,
    upgrade_schema,
)
from lbaas.model.enums import LIVE_AMPHORA_STATUSES, ProvisioningStatus
from tests.e2e.lab.lab_api import V2
from tests.support.lab_pair import (
    LabWorld,
    create_distributed,
    create_pair,
    create_single,
    vip_of,
)
from tests.support.vip_client import VipClient, VipClients

#: After each step, the client goes on this long before the step's window closes: a
#: failure the step caused but that shows late is still the step's.
SETTLE = 2.0
#: How long the load balancers have to leave PENDING_* at the end.
PENDING_WAIT = 60.0
#: The providers of the load balancers made (``provider_of``).
AMPHORA, DISTRIBUTED = "amphora", "distributed"


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[], object]


def create_load_balancers(
    world: LabWorld, per_topology: int, distributed: int = 0
) -> dict[str, list[str]]:
    """``per_topology`` SINGLE and ACTIVE_STANDBY load balancers and ``distributed`` ones of
    the distributed provider, all ACTIVE; ids by kind. No pair with one host: its amphorae
    need two (anti-affinity)."""
    pairs = per_topology if world.lab.state().hosts > 1 else 0
    made = {
        "single": [create_single(world, f"single-{i}") for i in range(per_topology)],
        "active_standby": [create_pair(world, f"pair-{i}") for i in range(pairs)],
        "distributed": [create_distributed(world, f"l4-{i}") for i in range(distributed)],
    }
    for ids in made.values():
        for lb_id in ids:
            world.api.wait_active(lb_id)
    return made


def provider_of(kind: str) -> str:
    """The provider of a kind of ``made``: "distributed" or "amphora"."""
    return DISTRIBUTED if kind.endswith("distributed") else AMPHORA


def vip_clients(
    world: LabWorld,
    made: dict[str, list[str]],
    pause: float = 0.01,
    timeout: float = 0.5,
    realtime: bool = False,
) -> VipClients:
    """The lab's client namespace asks every VIP (a distributed one through its entry
    node); each host asks the distributed VIPs too, balanced by that host's own rules, each
    VIP as often as the client namespace asks it (not yet started: a context manager)."""
    providers = {
        vip_of(world, lb_id): provider_of(kind) for kind, ids in made.items() for lb_id in ids
    }
    clients = [
        VipClient(world.lab.names.client, list(providers), pause, timeout, realtime=realtime)
    ]
    distributed = [vip for vip, provider in providers.items() if provider == DISTRIBUTED]
    if distributed:
        each = pause * len(providers) / len(distributed)
        hosts = range(1, world.lab.state().hosts + 1)
        clients += [
            VipClient(world.lab.names.host(i), distributed, each, timeout, realtime=realtime)
            for i in hosts
        ]
    return VipClients(clients, providers)


def create_and_update(world: LabWorld, made: dict[str, list[str]], label: str) -> None:
    """A create and an update through the API, each waited ACTIVE (a mixed deployment): a
    SINGLE load balancer, and a distributed one when ``made`` has any."""
    _create_and_update(world, made, "single", create_single(world, f"mixed-{label}"), label)
    if made.get("distributed"):
        lb_id = create_distributed(world, f"mixed-l4-{label}")
        _create_and_update(world, made, "distributed", lb_id, label)


def _create_and_update(
    world: LabWorld, made: dict[str, list[str]], kind: str, created: str, label: str
) -> None:
    """``created`` (of ``kind``) waited ACTIVE, then ``kind``'s first one updated."""
    made.setdefault(f"mixed_{kind}", []).append(created)
    world.api.wait_active(created)
    target = made[kind][0]
    body = {"loadbalancer": {"description": f"updated while {label}"}}
    world.api.call("PUT", f"{V2}/loadbalancers/{target}", body)
    world.api.wait_active(target)


def upgrade_steps(
    world: LabWorld,
    new: str,
    made: dict[str, list[str]],
    *,
    contract: Sequence[str] | None = ("--contract",),
    grace: float = STOP_GRACE,
    control_first: bool = True,
) -> list[Step]:
    """The procedure's steps (see the module's docstring); ``contract``: the options of the
    schema's contraction (``lbaas db upgrade <contract>``; None: left out, as an operator
    who waits to be sure of the new release would);
    ``grace``: SIGTERM to SIGKILL for each process stopped (0: SIGKILL); ``control_first``
    (the default): the schema and the control plane before the agents, so that the new
    health manager judges the old agents' restarts; False: the agents first."""
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
    schema = Step("schema: expand", lambda: upgrade_schema(lab, new, ["--expand"]))
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


def run_steps(client: VipClients, steps: Sequence[Step]) -> Iterator[dict[str, Any]]:
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
        if len(client.named()) > 1:
            figures["by_provider"] = {
                "longest_gap_s": {
                    p: round(s, 3) for p, s in client.longest_gap_by_provider(start, end).items()
                },
                "failed_requests": client.failed_by_provider(start, end),
            }
        if isinstance(done, Restart):
            figures |= {"stop_s": round(done.stop_s, 3), "start_s": round(done.start_s, 3)}
        if figures["failed_requests"]:
            figures["failed_by_route"] = client.failed_by_route(start, end)
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
