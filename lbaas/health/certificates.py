"""The fleet's certificates from the control plane: renewal rounds and CA rotation.

The health manager runs ``renew_due`` every ``health.certificate_renewal_interval``
seconds: the controller's client certificate (``<state_dir>/pki/controller``, which the
worker, API and health processes on this state directory all read again for their next
connection) and every UP host's agent certificate are renewed once two thirds of their
lifetime have passed (``lbaas.certs.renewal``); a host's certificate from another CA than
the signing one is reissued too. Several health managers may do it at once: each
renewal is whole, the last one wins, and every one of them is valid.

``lbaas certs rotate-ca begin`` and ``finish`` (``begin_rotation``, ``finish_rotation``)
walk the CA directory through ``lbaas.certs.rotation``'s phases and tell every enrolled
agent at the right moment, over its mutual-TLS API:

* begin: the new CA trusted alongside the old, here and then on every agent; only once
  every agent trusts both does the new CA sign: the controller's certificate and every
  agent's are reissued under it. An agent that cannot be reached stops the command
  before the new CA signs anything, or (lost during the reissue) with both CAs still
  trusted everywhere; either way it is run again: every step is idempotent.
* finish: refused while an agent still presents a certificate of the old CA (the
  controller's is reissued if it does); then every agent, and this state directory,
  trust the new CA alone.

An agent of wire version 1 (the release before these routes, ``lbaas.wire.versions``)
can be told nothing: a renewal round passes it by with a log line (not a failure), and
both rotation commands are refused while one is enrolled, naming it, before anything
changes: it would hold only the old CA, and refuse the controller once that is retired.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from lbaas.certs import rotation
from lbaas.certs.authority import CertificateAuthority, TlsFiles
from lbaas.db.engine import Database
from lbaas.db.hosts import host_repo
from lbaas.errors import CommandRefused, LbaasError
from lbaas.fleet.cert_renewal import presented, renew_agent, renew_if_due
from lbaas.fleet.client import AgentClient
from lbaas.fleet.peer_versions import PeerVersions
from lbaas.model.enums import HostStatus
from lbaas.model.fleet import HostAddress

log = logging.getLogger(__name__)

CONTROLLER = "controller"


@dataclass(frozen=True)
class FleetHost:
    where: HostAddress
    up: bool


HostSource = Callable[[], Sequence[FleetHost]]


def enrolled_hosts(database: Database) -> list[FleetHost]:
    """Every host of the registry, UP or not."""
    with database.read() as session:
        rows = host_repo.list_hosts(session)
    return [
        FleetHost(HostAddress(r.host_id, r.address, r.port), r.status == HostStatus.UP)
        for r in rows
    ]


ClientFactory = Callable[[HostAddress], AgentClient]


@dataclass(frozen=True)
class CertificateExpiry:
    """One certificate's end, as ``lbaas diagnose`` and the metric show it."""

    role: str  # ca, controller or agent
    host: str  # the host id of an agent; "" for the CA and the controller
    not_after: datetime.datetime | None  # None: not readable (an agent away)
    issuer: str = ""


class FleetCertificates:
    def __init__(
        self,
        pki: Path,
        hosts: HostSource,
        clients: ClientFactory,
        versions: PeerVersions | None = None,
    ) -> None:
        """``clients`` makes a new client per call (closed after it); ``versions``, the
        agents' wire versions the clients record, forgets hosts no longer enrolled."""
        self.pki = pki
        self._hosts = hosts
        self._clients = clients
        self._versions = versions
        #: Each UP host's certificate end as the last renewal round saw it (the metric's).
        self.seen: dict[str, datetime.datetime] = {}

    def authority(self) -> CertificateAuthority:
        # Loaded afresh each time: another process may have rotated it.
        return CertificateAuthority.load_or_create(self.pki)

    def controller_identity(self, now: datetime.datetime | None = None) -> TlsFiles:
        """The controller's client certificate, reissued if due or foreign."""
        ca = self.authority()
        return ca.ensure_identity(self.pki / CONTROLLER, CONTROLLER, "client", now=now)

    def renew_due(self, now: datetime.datetime) -> list[str]:
        """One renewal round; the ids of the hosts whose certificate was renewed."""
        self.controller_identity(now)
        ca = self.authority()
        renewed, seen = [], {}
        hosts = self._hosts()
        if self._versions is not None:
            self._versions.retain(host.where.host_id for host in hosts)
        for host in hosts:
            if not host.up:
                continue
            try:
                with self._clients(host.where) as client:
                    if not client.speaks("certificate_renewal"):
                        _passed_by(host.where.host_id, client)
                        continue
                    if renew_if_due(client, ca, host.where, now):
                        renewed.append(host.where.host_id)
                    seen[host.where.host_id] = presented(client).not_valid_after_utc
            except LbaasError as exc:  # one host away must not stop the others' renewal
                log.warning("certificate of host %s not renewed: %s", host.where.host_id, exc)
        self.seen = seen  # replaced whole: a scrape reads one round's
        for host_id in renewed:
            log.info("renewed the certificate of host %s", host_id)
        return renewed

    def begin_rotation(self, skip: frozenset[str] = frozenset()) -> list[str]:
        """Trust a new CA everywhere, then reissue every certificate under it; the hosts.
        ``skip``: host ids left out (gone for good: enrolled again after the rotation)."""
        hosts = [h for h in self._hosts() if h.where.host_id not in skip]
        self._refuse_older(hosts, "begin")
        if rotation.phase(self.pki) != "issuing":
            stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M")
            rotation.begin_trust(self.pki, common_name=f"lbaas local CA {stamp}")
        bundle = (self.pki / "trust.pem").read_text()
        if rotation.phase(self.pki) == "trusting":
            self._tell_every(hosts, lambda client, _: client.set_trust(bundle))
            rotation.switch_signer(self.pki)
        ca = self.authority()
        self.controller_identity()

        def reissue(client: AgentClient, where: HostAddress) -> None:
            if not client.certificate().self_renewing:
                renew_agent(client, ca, where)

        self._tell_every(hosts, reissue)
        return [host.where.host_id for host in hosts]

    def finish_rotation(self, skip: frozenset[str] = frozenset()) -> list[str]:
        """Retire the old CA once nothing presents its certificates; the hosts."""
        if rotation.phase(self.pki) == "none":
            raise CommandRefused("no CA rotation under way: `rotate-ca begin` starts one")
        if rotation.phase(self.pki) == "trusting":
            raise CommandRefused("the new CA does not sign yet: run `rotate-ca begin` again")
        ca = self.authority()
        self.controller_identity()
        hosts = [h for h in self._hosts() if h.where.host_id not in skip]
        self._refuse_older(hosts, "finish")
        stale: list[str] = []

        def check(client: AgentClient, where: HostAddress) -> None:
            if not ca.issued_this(presented(client)):
                stale.append(where.host_id)

        self._tell_every(hosts, check)
        if stale:
            raise CommandRefused(
                f"host(s) {', '.join(stale)} still present a certificate of the old CA: "
                "run `rotate-ca begin` again (a self-renewing agent renews within seconds)"
            )
        bundle = rotation.bundle_pem([ca.certificate]).decode()
        self._tell_every(hosts, lambda client, _: client.set_trust(bundle))
        rotation.retire(self.pki)
        return [host.where.host_id for host in hosts]

    def _refuse_older(self, hosts: Sequence[FleetHost], step: str) -> None:
        """Refused, naming them, while an agent speaks a wire version without the
        rotation's routes (one that cannot be reached is the later steps' to report)."""
        older = []
        for host in hosts:
            try:
                with self._clients(host.where) as client:
                    if not client.speaks("ca_rotation"):
                        older.append(f"{host.where.host_id} (wire version {client.peer_version})")
            except LbaasError:
                continue
        if older:
            raise CommandRefused(
                f"`rotate-ca {step}` refused: the agent of {', '.join(older)} is of an older "
                "release and cannot be told a new CA, so it would hold only the old one: "
                "upgrade it first (or leave it out with --skip HOST_ID and enrol it again)"
            )

    def _tell_every(
        self, hosts: Sequence[FleetHost], act: Callable[[AgentClient, HostAddress], object]
    ) -> None:
        """``act`` on every host's agent; refused, naming them, if any could not be told
        (the others were: each step is idempotent, so the command is run again)."""
        failed = []
        for host in hosts:
            try:
                with self._clients(host.where) as client:
                    act(client, host.where)
            except LbaasError as exc:
                detail = getattr(exc, "operator_message", None) or str(exc)
                failed.append(f"{host.where.host_id} ({detail})")
        if failed:
            raise CommandRefused(
                f"the agent of {', '.join(failed)} could not be told; nothing was retired "
                "and both CAs stay trusted: bring it back and run the command again (or "
                "leave a host gone for good out with --skip HOST_ID, and enrol it again)"
            )

    def expiries(self) -> list[CertificateExpiry]:
        """The CA's, the controller's and every host's certificate end (None: unread)."""
        ca = self.authority()
        found = [
            CertificateExpiry("ca", "", ca.certificate.not_valid_after_utc, _cn(ca.certificate))
        ]
        try:
            mine = x509.load_pem_x509_certificate(
                (self.pki / CONTROLLER / f"{CONTROLLER}.pem").read_bytes()
            )
            found.append(CertificateExpiry(CONTROLLER, "", mine.not_valid_after_utc, _cn(mine)))
        except (OSError, ValueError):
            found.append(CertificateExpiry(CONTROLLER, "", None))
        for host in self._hosts():
            try:
                with self._clients(host.where) as client:
                    theirs = presented(client)
            except LbaasError:
                found.append(CertificateExpiry("agent", host.where.host_id, None))
                continue
            found.append(
                CertificateExpiry(
                    "agent", host.where.host_id, theirs.not_valid_after_utc, _cn(theirs)
                )
            )
        return found


def _passed_by(host_id: str, client: AgentClient) -> None:
    log.info(
        "certificate of host %s not renewed this round: its agent speaks wire version %s "
        "(an older release, without the renewal routes); renewed once it is upgraded",
        host_id,
        client.peer_version,
    )


def _cn(certificate: x509.Certificate) -> str:
    names = certificate.issuer.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return str(names[0].value) if names else ""


def render_expiries(expiries: list[CertificateExpiry], now: datetime.datetime) -> str:
    lines = ["certificates of the controller-agent link:"]
    for found in expiries:
        who = f"{found.role} {found.host}".strip()
        if found.not_after is None:
            lines.append(f"  {who:<24} not readable (agent unreachable?)")
            continue
        days = (found.not_after - now).total_seconds() / 86400
        left = f"{days:.0f} days left" if days >= 0 else "EXPIRED"
        lines.append(
            f"  {who:<24} expires {found.not_after:%Y-%m-%d %H:%M} UTC ({left}), "
            f"issued by {found.issuer or '?'}"
        )
    return "\n".join(lines)
