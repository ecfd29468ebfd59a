"""``bench/tempest.py`` runs a class once more when its set-up failed (tempest creating
its users in Keystone on a loaded machine), never a test that failed, and says so."""

from __future__ import annotations

import re
import sys
from typing import Any

from tests.bench.quick_run import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from tempest import with_setup_retried  # noqa: E402

CLASS = "octavia_tempest_plugin.tests.api.v2.test_flavor_capabilities.FlavorCapabilitiesAPITest"
FAILED_TEST = "octavia_tempest_plugin.tests.api.v2.test_load_balancer.LoadBalancerAPITest.test_x"


def _figures(passed: int, failures: list[str]) -> dict[str, Any]:
    return {"passed": passed, "skipped": 0, "failed": len(failures), "failures": failures}


def test_a_class_whose_setup_failed_runs_once_more_and_a_failed_test_stays_failed() -> None:
    asked: list[str] = []

    def again(regex: str) -> dict[str, Any]:
        asked.append(regex)
        return _figures(1, [])

    first = _figures(8, [f"setUpClass ({CLASS})", FAILED_TEST])
    figures = with_setup_retried(first, again)
    assert len(asked) == 1 and re.search(asked[0], f"{CLASS}.test_flavor_capabilities_list")
    assert not re.search(asked[0], FAILED_TEST)
    assert figures["passed"] == 9 and figures["failures"] == [FAILED_TEST]
    assert figures["retried_after_setup_failure"] == [CLASS]


def test_a_setup_failing_twice_is_reported() -> None:
    first = _figures(8, [f"setUpClass ({CLASS})"])
    figures = with_setup_retried(first, lambda regex: _figures(0, [f"setUpClass ({CLASS})"]))
    assert figures["failed"] == 1 and figures["failures"] == [f"setUpClass ({CLASS})"]


def test_nothing_is_run_again_when_no_setup_failed() -> None:
    def again(regex: str) -> dict[str, Any]:
        raise AssertionError("run again")

    first = _figures(11, [FAILED_TEST])
    assert with_setup_retried(first, again) == first
