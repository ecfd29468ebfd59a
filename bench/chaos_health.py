"""``bench/chaos.py --case forged-flood | stalled-agent``: the health path under attack.

Issue 31 points 1 and 2, shown on the split processes of ``bench/chaos.py`` (``lbaas api``,
``worker``, ``health``, ``agent`` with real HAProxy) and one load balancer: an HTTP
listener whose pool has one member on a local backend.

* ``forged-flood`` (the pool has an HTTP health monitor, so member statuses move): first
  the normal member-status delay is measured (backend stopped: seconds until the member
  reads ERROR; started again: until ONLINE). Then two floods of ``--flood-seconds`` each,
  sent from a raw socket (root) in a separate process: ``own_source``, 500 forged
  datagrams a second whose source address and port are the agent's own heartbeat
  socket's; ``many_sources``, as fast as one process sends, each from a random
  127.x.y.z address and port. During each flood the backend is stopped and started again
  and the member-status delays measured.
* ``stalled-agent`` (no health monitor): the agent is SIGSTOPped, 2.5 s later the only
  backend stops (HAProxy then answers a request only after its connect retries), the
  agent stays stopped ``--stall-seconds``, then is resumed and the backend restarted.

Each prints failovers requested and hosts marked DOWN (from the health manager's log),
whether the amphora changed, and the longest member-status delay; the stalled agent also
how often the health manager found the amphora stale and its data plane answering
(``agent_degraded``: the case did reach the probe). Targets: 0 failovers;
0 hosts DOWN under a flood (a stalled agent's host is silent, so DOWN there is the
truth, and what matters is that its amphora, still serving, is not rebuilt); member
delays under a flood no longer than the normal ones.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from chaos import LB, Fleet, environment, uptime, wait_for_api
from chaos_single import SUBNET, kill_haproxies
from dataplane_procs import free_port

POOLS = "/v2/lbaas/pools"
OWN_SOURCE_RATE = 500.0


class Backend:
    """An HTTP server on a fixed address and port that can be stopped and started again."""

    def __init__(self, address: str) -> None:
        self.address, self.port = address, free_port(host=address)
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server interface
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *_args: Any) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        server = None
        for _ in range(50):  # the port can stay held a moment after the last stop
            try:
                server = ThreadingHTTPServer((self.address, self.port), Handler)
                break
            except OSError:
                time.sleep(0.1)
        if server is None:
            raise SystemExit(f"backend port {self.address}:{self.port} stays in use")
        self.server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


def udp_packet(source: tuple[str, int], target: tuple[str, int], payload: bytes) -> bytes:
    """An IPv4 UDP datagram with any source; the kernel fills the IP checksum and id, the
    UDP checksum is left out (0, allowed on IPv4)."""
    udp = struct.pack("!HHHH", source[1], target[1], 8 + len(payload), 0) + payload
    header = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        20 + len(udp),
        0,
        0,
        64,
        socket.IPPROTO_UDP,
        0,
        socket.inet_aton(source[0]),
        socket.inet_aton(target[0]),
    )
    return header + udp


def flood(
    target: tuple[str, int], source: tuple[str, int] | None, seconds: float, sent: Any
) -> None:
    """Forged datagrams (random bytes: they fail authentication) to ``target`` for
    ``seconds``: from ``source`` at OWN_SOURCE_RATE, or from random sources flat out."""
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    payload = os.urandom(180)
    count, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        if source is not None:
            packet = udp_packet(source, target, payload)
            time.sleep(max(0.0, start + count / OWN_SOURCE_RATE - time.monotonic()))
        else:
            address = (
                f"127.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"
            )
            packet = udp_packet((address, random.randrange(1024, 65536)), target, payload)
        try:
            raw.sendto(packet, (target[0], 0))
            count += 1
        except OSError:
            pass
    sent.value = count


def agent_heartbeat_source(pid: int, health_port: int) -> tuple[str, int]:
    """The local address of the agent's UDP socket (the one its heartbeats leave from)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    found = []
    for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[9] in inodes:
            local_hex, port_hex = fields[1].split(":")
            remote_port = int(fields[2].split(":")[1], 16)
            address = socket.inet_ntoa(struct.pack("<I", int(local_hex, 16)))
            found.append((remote_port == health_port, address, int(port_hex, 16)))
    if not found:
        raise SystemExit("the agent has no UDP socket: no heartbeat source to forge")
    _, address, port = max(found)
    return ("127.0.0.1" if address == "0.0.0.0" else address), port


class World:
    """The split fleet and one load balancer, with the figures read from its logs."""

    def __init__(self, workdir: Path, args: Any, monitor: bool) -> None:
        workdir.mkdir(parents=True)
        api_port = free_port()
        self.url = f"http://127.0.0.1:{api_port}"
        self.env = environment(workdir, args, api_port)
        self.env["LBAAS_HEALTH__HEARTBEAT_INTERVAL"] = "0.5"
        upgrade = [sys.executable, "-m", "lbaas.cli", "db", "upgrade"]
        subprocess.run(upgrade, env=self.env, check=True, capture_output=True)
        self.backend = Backend(self.env["CHAOS_BACKEND_ADDRESS"])
        self.backend.start()
        self.fleet = Fleet(workdir, self.env, 0.5, "inherited")
        self.fleet.start_all()
        self.health_log = workdir / "health.log"
        self.http = httpx.Client(base_url=self.url, timeout=10)
        try:
            if not wait_for_api(self.url, 120):
                raise SystemExit("the API did not start")
            self.lb_id, self.member_id, self.pool_id = self._create(monitor)
        except BaseException:
            self.stop()  # the caller gets no World to stop
            raise

    def _create(self, monitor: bool) -> tuple[str, str, str]:
        member = {"address": self.backend.address, "protocol_port": self.backend.port}
        pool: dict[str, Any] = {"name": "p", "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}
        pool["members"] = [member]
        if monitor:
            pool["healthmonitor"] = {
                "type": "HTTP",
                "delay": 1,
                "timeout": 1,
                "max_retries": 1,
                "url_path": "/",
            }
        self.vip_port = free_port()
        listener = {"protocol": "HTTP", "protocol_port": self.vip_port, "default_pool": pool}
        body = {"name": "health", "vip_subnet_id": SUBNET, "listeners": [listener]}
        r = self.http.post(LB, json={"loadbalancer": body})
        if r.status_code != 201:
            raise SystemExit(f"create refused: {r.status_code} {r.text[:300]}")
        self.lb_id = str(r.json()["loadbalancer"]["id"])
        self.wait(lambda: self.lb()["provisioning_status"] == "ACTIVE", 120, "ACTIVE")
        pool_id = str(self.lb()["pools"][0]["id"])
        members = self.http.get(f"{POOLS}/{pool_id}/members").json()["members"]
        return self.lb_id, str(members[0]["id"]), pool_id

    def lb(self) -> dict[str, Any]:
        return dict(self.http.get(f"{LB}/{self.lb_id}").json()["loadbalancer"])

    def amphorae(self) -> list[str]:
        amps = self.http.get("/v2/octavia/amphorae").json()["amphorae"]
        return sorted(a["id"] for a in amps if a["status"] != "DELETED")

    def member_status(self) -> str:
        r = self.http.get(f"{POOLS}/{self.pool_id}/members/{self.member_id}")
        return str(r.json()["member"]["operating_status"])

    def wait(self, condition: Any, limit: float, what: str) -> float:
        start = time.monotonic()
        while time.monotonic() - start < limit:
            try:
                if condition():
                    return time.monotonic() - start
            except (httpx.HTTPError, KeyError, IndexError):
                pass
            time.sleep(0.1)
        raise SystemExit(f"not {what} within {limit:.0f}s")

    def status_delays(self) -> dict[str, float]:
        """Backend stopped: seconds until the member reads ERROR; started: until ONLINE."""
        self.wait(lambda: self.member_status() == "ONLINE", 60, "ONLINE before")
        self.backend.stop()
        down = self.wait(lambda: self.member_status() == "ERROR", 60, "ERROR")
        self.backend.start()
        up = self.wait(lambda: self.member_status() == "ONLINE", 60, "ONLINE")
        return {"to_error_s": round(down, 2), "to_online_s": round(up, 2)}

    def log_counts(self) -> dict[str, int]:
        text = self.health_log.read_text(errors="replace") if self.health_log.exists() else ""
        return {
            "failovers": text.count("failover requested"),
            "hosts_marked_down": text.count("marked DOWN"),
            # The stale amphora seen and its data plane found answering: the probe ran.
            "agent_degraded": text.count("agent degraded, amphora not failed over"),
        }

    def stop(self) -> None:
        self.fleet.stop()
        self.backend.stop()
        kill_haproxies(self.env["LBAAS_STATE_DIR"])


def forged_flood(world: World, seconds: float) -> dict[str, Any]:
    normal = world.status_delays()
    agent = world.fleet.procs["agent"].pid
    target = ("127.0.0.1", int(world.env["LBAAS_HEALTH__BIND_PORT"]))
    source = agent_heartbeat_source(agent, target[1])
    results: dict[str, Any] = {"normal_status_delay": normal, "agent_source": list(source)}
    for name, forged in (("own_source", source), ("many_sources", None)):
        before, amphorae = world.log_counts(), world.amphorae()
        # Spawned, not forked: a forked sender held a copy of the backend's listening
        # socket, so the "stopped" backend still completed HAProxy's connects (its checks
        # then failed only by timeout: the member took 3 s longer to read ERROR).
        spawn = multiprocessing.get_context("spawn")
        sent = spawn.Value("q", 0)
        sender = spawn.Process(target=flood, args=(target, forged, seconds, sent))
        start = time.monotonic()
        sender.start()
        time.sleep(min(2.0, seconds / 4))
        delays = world.status_delays()
        sender.join(seconds + 30)
        took = time.monotonic() - start
        time.sleep(2.0)  # what the flood set off has time to show
        after = world.log_counts()
        results[name] = {
            "forged_sent": int(sent.value),
            "forged_per_s": round(sent.value / max(took, 0.001)),
            "failovers": after["failovers"] - before["failovers"],
            "hosts_marked_down": after["hosts_marked_down"] - before["hosts_marked_down"],
            "amphora_replaced": world.amphorae() != amphorae,
            "status_delay": delays,
            "longest_status_delay_s": max(delays.values()),
        }
    longest_normal = max(normal.values())
    results["targets"] = {
        name: {
            "no_failover": results[name]["failovers"] == 0,
            "no_host_down": results[name]["hosts_marked_down"] == 0,
            # 1 s of slack: one poll of the API and one heartbeat either way.
            "status_delay_within_normal": results[name]["longest_status_delay_s"]
            <= longest_normal + 1.0,
        }
        for name in ("own_source", "many_sources")
    }
    return results


def stalled_agent(world: World, stall: float, trials: int) -> dict[str, Any]:
    runs = []
    for _ in range(trials):
        before, amphorae = world.log_counts(), world.amphorae()
        agent = world.fleet.procs["agent"].pid
        os.kill(agent, signal.SIGSTOP)
        try:
            time.sleep(2.5)
            world.backend.stop()
            time.sleep(stall - 2.5)
        finally:
            os.kill(agent, signal.SIGCONT)
        time.sleep(3.0)
        world.backend.start()
        world.wait(lambda: world.lb()["provisioning_status"] == "ACTIVE", 120, "ACTIVE after")
        after = world.log_counts()
        runs.append(
            {
                "failovers": after["failovers"] - before["failovers"],
                "hosts_marked_down": after["hosts_marked_down"] - before["hosts_marked_down"],
                "agent_degraded": after["agent_degraded"] - before["agent_degraded"],
                "amphora_replaced": world.amphorae() != amphorae,
            }
        )
    return {
        "stall_s": stall,
        "trials": runs,
        "failovers": sum(r["failovers"] for r in runs),
        "targets": {
            "no_failover": all(r["failovers"] == 0 and not r["amphora_replaced"] for r in runs)
        },
    }


def health_case(args: Any, workdir: Path) -> dict[str, Any]:
    if os.geteuid() != 0:
        raise SystemExit("forging heartbeat sources takes a raw socket: run as root")
    load_before = uptime()
    world = World(workdir / "h", args, monitor=args.case == "forged-flood")
    try:
        if args.case == "forged-flood":
            seconds = 8.0 if args.quick else args.flood_seconds
            figures = forged_flood(world, seconds)
        else:
            figures = stalled_agent(world, args.stall_seconds, 1 if args.quick else args.trials)
    finally:
        world.stop()
    return {
        "case": args.case,
        "quick": args.quick,
        **figures,
        "load_before": load_before,
        "load": uptime(),
        "cpus": os.cpu_count(),
    }
