"""Namespaces and processes a netns end-to-end test makes itself, so it can always remove them."""

from __future__ import annotations

import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from lbaas.host.real import RealHostOps

BACKEND_PORT = 8000


@dataclass
class ScratchNet:
    """What the test itself creates: namespaces on the agent's bridges, and their processes."""

    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:5])
    namespaces: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def plug(self, host: RealHostOps, role: str, bridge: str, *addresses: str) -> str:
        """A namespace ``lbt-<tag>-<role>`` with one leg on ``bridge`` holding ``addresses``."""
        namespace = f"lbt-{self.tag}-{role}"
        outer, inner = f"lbt{self.tag}{role}h", f"lbt{self.tag}{role}n"
        host.create_namespace(namespace)
        self.namespaces.append(namespace)
        host.create_veth_pair(outer, inner)
        host.move_to_namespace(inner, namespace)
        host.attach_to_bridge(outer, bridge)
        host.set_link_up(outer)
        host.set_link_up(inner, namespace)
        for address in addresses:
            host.add_address(inner, address, namespace)
        return namespace

    def start(self, namespace: str, argv: list[str]) -> None:
        """Run ``argv`` inside ``namespace`` until the test ends."""
        self.processes.append(
            subprocess.Popen(
                ["ip", "netns", "exec", namespace, *argv],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )

    def serve(self, namespace: str, address: str, name: str, root: Path) -> None:
        """An HTTP server on ``address``:BACKEND_PORT answering ``name``."""
        docroot = root / name
        docroot.mkdir()
        (docroot / "index.html").write_text(name)
        argv = [sys.executable, "-m", "http.server", str(BACKEND_PORT), "--bind", address]
        self.start(namespace, [*argv, "--directory", str(docroot)])

    def remove(self, host: RealHostOps) -> None:
        for process in self.processes:
            process.kill()
            process.wait(10)
        self.processes.clear()
        for namespace in self.namespaces:
            host.delete_namespace(namespace)
        self.namespaces.clear()
