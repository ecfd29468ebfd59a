"""HAProxy's CPU while its agent is dead, with and without the access-log socket keeper.

    python bench/log_keeper.py [--quick] [--load-balancers N] [--spell S]

Starts ``lbaas serve`` (amphora provider, loopback mode, real HAProxy, the socket keeper
on), creates N load balancers with an HTTP listener each, then samples the CPU time
(utime + stime from ``/proc/<pid>/stat``) of every HAProxy process of the state
directory over ``--spell`` seconds three times: with the agent up; with serve SIGKILLed
and its keeper holding the access-log sockets (``kept``); with serve SIGKILLed and the
keeper killed too, so the sockets refuse and HAProxy 2.6's ring forwarders reconnect
without pause (``unkept``: the agent restart before issue 35's keeper). Serve is started
again after each dead spell. Prints JSON (CPU seconds per spell, and per second); nothing
here asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lbaas.amphora.held_log_sockets import refuses  # noqa: E402
from lbaas.config import AccessLogSettings  # noqa: E402
from tests.e2e.amphora.serve_process import (  # noqa: E402
    ServeInstance,
    haproxy_pids_under,
    kill_and_restart,
    kill_keepers_of,
    running_serve,
)
from tests.e2e.amphora.topology import LOOPBACK_SUBNET_ID  # noqa: E402
from tests.support.process_cpu import cpu_ticks  # noqa: E402
from tests.support.waiting import wait_until  # noqa: E402

PORT = 8080
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pids: list[int]) -> float:
    return cpu_ticks(pids) / _TICK


def _spell(pids: list[int], seconds: float) -> dict[str, float]:
    before, started = _cpu_seconds(pids), time.monotonic()
    time.sleep(seconds)
    used, took = _cpu_seconds(pids) - before, time.monotonic() - started
    return {"cpu_s": round(used, 2), "cores": round(used / took, 3), "load": os.getloadavg()[0]}


def _log_sockets(serve: ServeInstance) -> list[Path]:
    amphorae = [d.name for d in (serve.state_dir / "amphorae").iterdir() if d.is_dir()]
    return [AccessLogSettings().socket_directory / f"{a}.sock" for a in amphorae]


def _adoptions(serve: ServeInstance) -> int:
    return serve.log.read_text(errors="replace").count("adopted amphorae")


def _measure(serve: ServeInstance, count: int, spell: float) -> dict[str, Any]:
    with serve.api() as api:
        for index in range(count):
            lb = api.create_loadbalancer(LOOPBACK_SUBNET_ID, name=f"keeper-bench-{index}")
            api.create_listener(lb["id"], "HTTP", PORT)
    sockets = _log_sockets(serve)
    wait_until(lambda: not any(map(refuses, sockets)), 60, "every log socket to listen")
    haproxies = haproxy_pids_under(serve.state_dir)
    figures: dict[str, Any] = {"haproxy_processes": len(haproxies)}
    figures["agent_up"] = _spell(haproxies, spell)
    adopted = _adoptions(serve)
    with kill_and_restart(serve):
        figures["agent_down_kept"] = _spell(haproxies, spell)
    # The new agent must have taken the listeners back before the keeper is killed.
    wait_until(lambda: _adoptions(serve) > adopted, 120, "the new agent's adoption")
    with kill_and_restart(serve):
        kill_keepers_of(serve.state_dir)
        wait_until(lambda: all(map(refuses, sockets)), 30, "the log sockets to refuse")
        figures["agent_down_unkept"] = _spell(haproxies, spell)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1 load balancer, 1 s spells")
    parser.add_argument("--load-balancers", type=int, default=5)
    parser.add_argument("--spell", type=float, default=5.0, help="seconds sampled per case")
    args = parser.parse_args()
    count, spell = (1, 1.0) if args.quick else (args.load_balancers, args.spell)
    load_before = os.getloadavg()
    with running_serve({"agent": {"log_socket_keeper": True}}, prefix="lbkb-") as serve:
        figures = _measure(serve, count, spell)
    report = {"load_balancers": count, "spell_s": spell, **figures}
    report |= {"load_average_before": load_before, "load_average_after": os.getloadavg()}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
