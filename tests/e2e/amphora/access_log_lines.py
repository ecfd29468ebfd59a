"""Reading a load balancer's access-log file in the amphora e2e tests.

``LoggedServices`` is the usual pair under test: an HTTP and a TCP listener on one load
balancer, serving, with the number of lines each already had (the readiness probes are
logged too, so a test counts from there).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.amphora.backends import HttpBackend
from tests.e2e.amphora.topology import HttpService, LoadBalancerUnderTest, http_service
from tests.e2e.amphora.traffic import wait_serving


def listener_lines(path: Path, listener_id: str) -> list[list[str]]:
    """The fields of each line of ``listener_id`` in the file, in file order."""
    if not path.exists():
        return []
    fields = (line.split(" ") for line in path.read_text().splitlines())
    return [f for f in fields if len(f) > 2 and f[2] == listener_id]


def wait_lines(path: Path, listener_id: str, count: int) -> list[list[str]]:
    """The listener's lines once ``count`` have arrived and no more come for a moment."""
    deadline = time.monotonic() + 30
    while len(listener_lines(path, listener_id)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # a line too many would arrive now
    return listener_lines(path, listener_id)


def only_request_lines(path: Path, project_id: str, lb_id: str) -> bool:
    """Every line of the file is one of the load balancer's (none of HAProxy's own)."""
    lines = path.read_text().splitlines()
    strangers = [line for line in lines if line.split(" ")[:2] != [project_id, lb_id]]
    assert not strangers, f"not access-log lines: {strangers[:5]}"
    return bool(lines)


@dataclass
class LoggedServices:
    web: HttpService
    tcp: HttpService
    log_file: Path
    web_before: int
    tcp_before: int

    def new_lines(self, web: int, tcp: int) -> tuple[list[list[str]], list[list[str]]]:
        """The lines since the start, once ``web`` and ``tcp`` new ones have arrived."""
        web_id, tcp_id = self.web.listener["id"], self.tcp.listener["id"]
        web_lines = wait_lines(self.log_file, web_id, self.web_before + web)
        tcp_lines = wait_lines(self.log_file, tcp_id, self.tcp_before + tcp)
        return web_lines[self.web_before :], tcp_lines[self.tcp_before :]


def logged_services(
    lb: LoadBalancerUnderTest,
    state_dir: Path,
    web_backends: list[HttpBackend],
    tcp_backend: HttpBackend,
) -> LoggedServices:
    web = http_service(lb, web_backends)
    tcp = http_service(lb, [tcp_backend], protocol="TCP")
    wait_serving(lb.vip, web.port)
    wait_serving(lb.vip, tcp.port)
    log_file = state_dir / "access-logs" / f"{lb.id}.log"
    web_before = len(wait_lines(log_file, web.listener["id"], 1))
    tcp_before = len(wait_lines(log_file, tcp.listener["id"], 1))
    return LoggedServices(web, tcp, log_file, web_before, tcp_before)
