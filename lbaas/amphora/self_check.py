"""One amphora looked at now, for ``lbaas diagnose`` (``lbaas.wire.amphora_diagnosis``).

Three things only the host can tell, gathered when asked rather than kept up to date:
whether each probed listener's VIP:port answers a connect now (made exactly as the
agent's periodic probe makes it, from the probe source every frontend rejects before
logging, so it never reaches the tenant's access log), which other processes listen on it
(``vip_owners``), and why HAProxy holds each server down: the ``check_status``,
``check_code``, ``check_desc`` and ``last_chk`` columns of ``show stat``, which the
heartbeat does not carry (it says only UP or DOWN).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from lbaas.amphora.converger import AmphoraConverger
from lbaas.amphora.vip_owners import foreign_listeners
from lbaas.amphora.vip_probe import ProbeSubject, probe_errors
from lbaas.host.runtime_api import RuntimeApiError
from lbaas.model.graph import ListenerId
from lbaas.render.haproxy.names import parse_server_name
from lbaas.wire.amphora_diagnosis import AmphoraDiagnosis, ServerCheck, VipPortCheck

log = logging.getLogger(__name__)

#: Seconds one connect of the check may take (the periodic probe's default).
CONNECT_TIMEOUT = 1.0
ATTEMPTS = 4
RETRY_PAUSE = 0.3


def check_amphora(amp: AmphoraConverger, timeout: float = CONNECT_TIMEOUT) -> AmphoraDiagnosis:
    master = amp.instance.master_pid()
    subject = amp.probe_subject()
    ports: list[VipPortCheck] = []
    pids: set[int] = set()
    if subject is not None:
        answers = _probe(subject, timeout)
        for listener_id, port in sorted(subject.ports.items(), key=lambda item: item[1]):
            ours, foreign = foreign_listeners(master, subject.address, port)
            pids |= ours
            ports.append(
                VipPortCheck(
                    listener_id=listener_id,
                    port=port,
                    answers=listener_id in answers and answers[listener_id] is None,
                    error=answers.get(listener_id, "not probed"),
                    foreign=tuple(foreign),
                )
            )
    return AmphoraDiagnosis(
        amphora_id=amp.id,
        haproxy_pids=tuple(sorted(pids or ({master} if master is not None else set()))),
        vip_ports=tuple(ports),
        servers=_servers(amp) if master is not None else (),
    )


def _probe(subject: ProbeSubject, timeout: float) -> Mapping[ListenerId, str | None]:
    """Each port's connect (None: it completed; else why not); one that failed is tried
    again (``ATTEMPTS`` in all, a little apart), since the periodic prober may hold the same
    source address and port towards it at this very moment. A failure is logged with its
    reason, which the diagnosis also carries."""
    results = dict(probe_errors(subject, timeout))
    for _ in range(ATTEMPTS - 1):
        failed = {lid: port for lid, port in subject.ports.items() if results.get(lid)}
        if not failed:
            break
        time.sleep(RETRY_PAUSE)
        again = ProbeSubject(subject.amphora_id, subject.address, failed, subject.namespace)
        results.update(probe_errors(again, timeout))
    for lid, error in results.items():
        if error is not None:
            log.warning("diagnosis of amphora %s: listener %s: %s", subject.amphora_id, lid, error)
    return results


def _servers(amp: AmphoraConverger) -> tuple[ServerCheck, ...]:
    api = amp.instance.runtime()
    if api is None:
        return ()
    try:
        rows = api.show_stat()
    except RuntimeApiError as exc:
        log.info("no server states from amphora %s: %s", amp.id, exc)
        return ()
    return tuple(server_checks(rows))


def server_checks(rows: Sequence[Mapping[str, str]]) -> list[ServerCheck]:
    """The servers lbaas named, with their check columns (empty ones as None)."""

    def column(row: Mapping[str, str], name: str) -> str | None:
        return row.get(name) or None

    return [
        ServerCheck(
            backend=row.get("pxname", ""),
            server=row.get("svname", ""),
            status=row.get("status", ""),
            check_status=column(row, "check_status"),
            check_code=column(row, "check_code"),
            check_desc=column(row, "check_desc"),
            last_check=column(row, "last_chk"),
        )
        for row in rows
        if parse_server_name(row.get("svname", "")) is not None
    ]
