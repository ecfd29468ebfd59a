"""Three control-plane hosts in a lab, one of them lost while 20 load balancers change.

Needs root. ``up --control 3``: ctl, ctl2 and ctl3 each run api, worker and health against
the database host's PostgreSQL, coordinated on it; h1's agent heartbeats to all three
health processes. A client in ``<lab>-cli`` keeps changing 20 noop load balancers through
the two APIs that will survive (PUT, then GET until ACTIVE, round robin over the two)
while the control host leading housekeeping is lost at one instant (``host-down``,
``control_loss.py``): every call is answered, every change in flight is finished by a
surviving worker (a lost worker's claim lapses after the job lease), no load balancer
stays PENDING, the amphora load balancer on h1 is not failed over (its heartbeats still
reach two health processes) and every singleton loop is led again, by a surviving host.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lab_probe import lab_links

from lbaas.lab.lab import Lab
from lbaas.lab.services import start_services
from lbaas.model.enums import HostStatus
from tests.e2e.lab.control_loss import SINGLETONS, lose_control_host

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.haproxy]

CHANGING = 20


def test_a_control_host_lost_while_twenty_load_balancers_change(
    lab_name: str, lab_dir: Path
) -> None:
    lab = Lab(lab_name, lab_dir)
    try:
        lab.up(hosts=1, members=1, control=3)
        assert sorted(start_services(lab)["apis"]) == ["ctl", "ctl2", "ctl3"]
        loss = lose_control_host(lab, CHANGING)
        print(json.dumps(loss.figures))
        assert loss.figures["calls"] > 4 * CHANGING  # the changes went on through the loss
        assert loss.figures["failures"] == []
        assert loss.lost not in loss.survivors and len(loss.survivors) == 2
        assert loss.amphorae_after == loss.amphorae_before  # no failover
        assert loss.host_status == HostStatus.UP
        assert set(loss.leaders_after) >= SINGLETONS
        assert {loss.leaders_after[loop] for loop in SINGLETONS} <= set(loss.survivors)
    finally:
        lab.down()
    # Nothing of the lab is left: no link, no PostgreSQL cluster.
    assert lab_links(f"{lab_name}-") == []
    assert not lab.names.database_dir.exists()
