"""The ``ip`` commands the lab runs, each inside a namespace it owns."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence

from lbaas.lab.base import LabError, Runner


class Netns:
    def __init__(self, run: Runner) -> None:
        self._run = run

    def check(self, argv: Sequence[str]) -> str:
        done = self._run(argv)
        if done.returncode != 0:
            raise LabError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    def names(self) -> list[str]:
        # Lines read "name" or "name (id: 3)".
        return [
            line.split()[0] for line in self.check(["ip", "netns", "list"]).splitlines() if line
        ]

    def add(self, namespace: str) -> None:
        self.check(["ip", "netns", "add", namespace])
        self.ip(namespace, "link", "set", "lo", "up")

    def delete(self, namespace: str) -> bool:
        """Delete ``namespace``; False when it was already gone."""
        done = self._run(["ip", "netns", "delete", namespace])
        if done.returncode == 0:
            return True
        if namespace not in self.names():
            return False
        raise LabError(f"cannot delete namespace {namespace}: {done.stderr.strip()}")

    def pids(self, namespace: str) -> list[int]:
        done = self._run(["ip", "netns", "pids", namespace])
        return [int(word) for word in done.stdout.split()] if done.returncode == 0 else []

    def ip(self, namespace: str, *argv: str) -> str:
        return self.check(["ip", "-n", namespace, *argv])

    def sysctl(self, namespace: str, *settings: str) -> None:
        self.check(["ip", "netns", "exec", namespace, "sysctl", "-qw", *settings])

    def bridge(self, namespace: str, name: str, address: str = "") -> None:
        """A bridge, up; ``address``: its MAC for good (without one it follows its ports)."""
        mac = ["address", address] if address else []
        self.ip(namespace, "link", "add", name, *mac, "type", "bridge")
        self.ip(namespace, "link", "set", name, "up")

    def veth(
        self, inner_ns: str, inner: str, outer_ns: str, outer: str, *, bridge: str | None = None
    ) -> None:
        """A veth pair from ``inner`` in ``inner_ns`` to ``outer`` in ``outer_ns``, both up.

        With ``bridge``, ``outer`` becomes a port of that bridge (in ``outer_ns``).

        The command runs in ``outer_ns`` so the pair never exists in the root namespace,
        not even for a moment.
        """
        self.ip(outer_ns, "link", "add", outer, "type", "veth", "peer", "name", inner,
                "netns", inner_ns)  # fmt: skip
        if bridge is not None:
            self.ip(outer_ns, "link", "set", outer, "master", bridge)
        self.ip(inner_ns, "link", "set", inner, "up")
        self.ip(outer_ns, "link", "set", outer, "up")

    def set_link(self, namespace: str, name: str, *, up: bool) -> None:
        self.ip(namespace, "link", "set", name, "up" if up else "down")

    def nft(self, namespace: str, ruleset: str, table: str) -> None:
        """Load ``ruleset`` (which defines bridge table ``table``) in place of the old one."""
        self._run(["ip", "netns", "exec", namespace, "nft", "delete", "table", "bridge", table])
        with tempfile.NamedTemporaryFile("w", suffix=".nft") as file:
            file.write(ruleset)
            file.flush()
            done = self._run(["ip", "netns", "exec", namespace, "nft", "-f", file.name])
        if done.returncode != 0:
            raise LabError(f"nft in {namespace} failed: {done.stderr.strip()}")
