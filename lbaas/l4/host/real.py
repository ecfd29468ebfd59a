"""NftOps with the real ``nft`` and ``conntrack`` binaries, as root.

Rulesets go to ``nft`` on standard input, so a 65537-slot map never touches the disk.
With a namespace the commands run through ``ip netns exec``: nftables tables and conntrack
entries are per network namespace.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from typing import Any

from lbaas.errors import InvalidRenderedConfig
from lbaas.l4.host.base import FlowMatch, NftCommandFailed, NftOps, VipHolder
from lbaas.l4.service import L4Protocol

_TIMEOUT = 60.0


class NamespaceCommands:
    """Runs commands in ``_prefix``'s namespace (set by the subclass); a command that cannot
    run, or that ``_must`` succeed and fails, is an ``NftCommandFailed``."""

    _prefix: list[str]

    def _must(self, argv: list[str]) -> None:
        done = self._run(argv)
        if done.returncode != 0:
            raise NftCommandFailed(done.args, done.returncode, done.stderr)

    def _run(
        self, argv: Sequence[str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        full = [*self._prefix, *argv]
        try:
            return subprocess.run(
                full, input=stdin, capture_output=True, text=True, timeout=_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise NftCommandFailed(full, -1, str(exc)) from exc


class RealNftOps(NamespaceCommands, NftOps):
    def __init__(
        self,
        namespace: str | None = None,
        *,
        nft_binary: str = "nft",
        conntrack_binary: str = "conntrack",
        ip_binary: str = "ip",
    ) -> None:
        self._prefix = [] if namespace is None else [ip_binary, "netns", "exec", namespace]
        self._nft = nft_binary
        self._conntrack = conntrack_binary

    def check(self, ruleset: str) -> None:
        done = self._run([self._nft, "-c", "-f", "-"], ruleset)
        if done.returncode != 0:
            raise InvalidRenderedConfig(
                "nft refused the L4 ruleset.", f"nft -c: {done.stderr.strip()}"
            )

    def load(self, ruleset: str) -> None:
        done = self._run([self._nft, "-f", "-"], ruleset)
        if done.returncode != 0:
            raise NftCommandFailed(done.args, done.returncode, done.stderr)

    def list_table(self, name: str) -> str | None:
        done = self._run([self._nft, "list", "table", "ip", name])
        return done.stdout if done.returncode == 0 else None

    def list_chain_json(self, table: str, chain: str) -> dict[str, Any] | None:
        done = self._run([self._nft, "-j", "list", "chain", "ip", table, chain])
        if done.returncode != 0:
            return None
        listing: dict[str, Any] = json.loads(done.stdout)
        return listing

    def list_json(self, words: Sequence[str], *, terse: bool = False) -> dict[str, Any] | None:
        done = self._run([self._nft, "-j", *(["-t"] if terse else []), "list", *words])
        if done.returncode != 0:
            return None
        listing: dict[str, Any] = json.loads(done.stdout)
        return listing

    def count_flows(self, protocol: L4Protocol, vip: str, port: int) -> int:
        argv = [self._conntrack, "-L", "-p", protocol.value, "--orig-dst", vip]
        done = self._run([*argv, "--orig-port-dst", str(port)])
        # Exit 0 with a summary line on stderr, also for none ("0 flow entries ...").
        summary = done.stderr.strip().splitlines()[-1:] or [""]
        if done.returncode != 0 or "flow entries have been shown" not in summary[0]:
            raise NftCommandFailed(done.args, done.returncode, done.stderr)
        return int(summary[0].split(":")[-1].split()[0])

    def delete_flows(self, flows: FlowMatch) -> int:
        argv = [
            self._conntrack,
            "-D",
            "-p",
            flows.protocol.value,
            "--orig-dst",
            flows.vip,
            "--orig-port-dst",
            str(flows.port),
            "--reply-src",
            flows.member_address,
            "--reply-port-src",
            str(flows.member_port),
        ]
        done = self._run(argv)
        # conntrack exits 1 when nothing matched; its summary line says how many went.
        summary = done.stderr.strip().splitlines()[-1:] or [""]
        if "flow entries have been deleted" not in summary[0]:
            raise NftCommandFailed(done.args, done.returncode, done.stderr)
        return int(summary[0].split(":")[-1].split()[0])


class RealVipHolder(NamespaceCommands, VipHolder):
    """The VIP as a /32 on ``lo``: Linux answers ARP for any local address on any of its
    interfaces (``arp_ignore`` 0, the default) and ping for it, and a /32 on ``lo`` adds
    no route to anywhere. A namespace with ``arp_ignore`` set would need it on the link."""

    def __init__(self, namespace: str | None = None, *, ip_binary: str = "ip") -> None:
        self._prefix = [] if namespace is None else [ip_binary, "netns", "exec", namespace]
        self._ip = ip_binary

    def hold(self, vip: str) -> None:
        self._must(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        self._must([self._ip, "addr", "replace", f"{vip}/32", "dev", "lo"])

    def hold_many(self, vips: Sequence[str]) -> None:
        """One ``sysctl`` and one ``ip -batch`` for all of them: a process or two per VIP
        made an agent restoring thousands of entry load balancers wait minutes (issue 34)."""
        if not vips:
            return
        self._must(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        lines = "".join(f"address replace {vip}/32 dev lo\n" for vip in vips)
        done = self._run([self._ip, "-batch", "-"], lines)
        if done.returncode != 0:
            raise NftCommandFailed(done.args, done.returncode, done.stderr)

    def release(self, vip: str) -> None:
        done = self._run([self._ip, "addr", "del", f"{vip}/32", "dev", "lo"])
        if done.returncode != 0 and "Address not found" not in done.stderr:
            raise NftCommandFailed(done.args, done.returncode, done.stderr)
