"""``lbaas certs``: the certificates of the controller-agent link, from a control-plane
machine (it holds the CA under ``<state_dir>/pki`` and reads the hosts from the database).

* ``status``: each certificate's end: the CA's, the controller's, every enrolled agent's.
* ``renew``: one renewal round now (what the health manager does every
  ``health.certificate_renewal_interval``): what is past two thirds of its lifetime.
* ``rotate-ca begin`` / ``rotate-ca finish``: see ``lbaas.health.certificates``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from lbaas.certs.authority import CertificateAuthority
from lbaas.certs.renewal import utc_now
from lbaas.config import Settings
from lbaas.db.engine import Database
from lbaas.fleet.client_pool import tls_client_factory
from lbaas.health.certificates import (
    CONTROLLER,
    FleetCertificates,
    enrolled_hosts,
    render_expiries,
)

#: Seconds for one agent's answer: a command, not a converge; a silent host fails it.
AGENT_TIMEOUT = 10.0


def add_parser(
    commands: Any, state_dir_help: str, settings_of: Callable[[argparse.Namespace], Settings]
) -> None:
    """``lbaas certs`` under ``commands``; ``settings_of``: the command line's settings."""
    certs = commands.add_parser("certs", help="the certificates of the controller-agent link")
    sub = certs.add_subparsers(dest="certs_command", required=True)
    for name, text in (
        ("status", "each certificate's expiry: the CA's, the controller's, every agent's"),
        ("renew", "renew now every certificate past two thirds of its lifetime"),
        ("rotate-ca", "rotate the CA: begin (trust and sign with a new one), then finish"),
    ):
        command = sub.add_parser(name, help=text)
        if name == "rotate-ca":
            command.add_argument("phase", choices=("begin", "finish"))
            command.add_argument(
                "--skip",
                action="append",
                default=[],
                metavar="HOST_ID",
                help="leave out a host gone for good (repeat); enrol it again afterwards",
            )
        command.add_argument("--state-dir", help=state_dir_help)
        command.add_argument("--database-url")
        command.set_defaults(func=lambda args: run(args, settings_of(args)))


def run(args: argparse.Namespace, settings: Settings) -> int:
    database = Database(settings.database_url)  # no upgrade: not this command's business
    pki = settings.state_dir.absolute() / "pki"
    try:
        ca = CertificateAuthority.load_or_create(pki)
        tls = ca.ensure_identity(pki / CONTROLLER, CONTROLLER, "client")
        certificates = FleetCertificates(
            pki,
            lambda: enrolled_hosts(database),
            tls_client_factory(tls, timeout=AGENT_TIMEOUT, handshake_timeout=None),
        )
        if args.certs_command == "status":
            print(render_expiries(certificates.expiries(), utc_now()))
        elif args.certs_command == "renew":
            renewed = certificates.renew_due(utc_now())
            print(f"renewed: {', '.join(renewed) or 'no agent certificate was due'}")
        elif args.phase == "begin":
            hosts = certificates.begin_rotation(frozenset(args.skip))
            print(
                f"new CA trusted and signing; the controller and {len(hosts)} host(s) "
                "reissued; run `lbaas certs rotate-ca finish` to retire the old CA"
            )
        else:
            hosts = certificates.finish_rotation(frozenset(args.skip))
            print(f"old CA retired on this state directory and {len(hosts)} host(s)")
    finally:
        database.dispose()
    return 0
