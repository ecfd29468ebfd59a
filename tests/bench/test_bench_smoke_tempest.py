"""Octavia's own API tests against lbaas through a real Keystone: a subset in the suite.

``bench/tempest.py --quick`` runs octavia-tempest-plugin's load balancer, provider and
flavor-capability API tests (tempest's dynamic credentials: a project and users with
roles per class, real tokens validated by lbaas) and exits 1 if any failed; the whole
API suite is ``bench/tempest.py`` without ``--quick`` (figures in docs/api-compat.md).
"""

from __future__ import annotations

from tests.bench.quick_run import quick_figures


def test_octavias_load_balancer_api_tests_pass_through_keystone() -> None:
    figures = quick_figures("tempest.py", timeout=900)
    assert figures["failed"] == 0, figures["failures"]
    # Every load balancer test but the IPv6 one (lbaas's loopback network has no IPv6
    # subnet), the provider list and the flavor capabilities.
    assert figures["passed"] >= 11, figures
