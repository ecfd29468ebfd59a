"""The provider interface: the one thing every data plane implements.

A provider is handed the whole desired graph of a load balancer and makes its data plane
match it. That is the design's "converge, don't script": there is no create-listener or
update-member call to sequence, so a provider never sees half a change, and applying the
same graph twice is a no-op. Providers declare up front what they can do
(``ProviderCapabilities``); the API checks every request against that declaration before
anything is written, so an unsupported option is a 400 and never a failed converge.

Errors: ``apply`` and ``delete`` raise ``lbaas.errors.TemporaryError`` for conditions worth
retrying (an agent that does not answer) and ``PermanentError`` for those that are not (a
configuration a real validator refused). Anything else is treated as temporary by the job
runner until its attempts run out.

Fencing: ``apply`` and ``delete`` run inside a converge job and are handed its ``Claim``
(load balancer, generation, lease owner). A provider that writes to the database checks,
inside each writing transaction, that the claim still holds its lease
(``lbaas.db.jobs.job_queue.check_fence`` is not ``LOST``), exactly as the job's final settle
does, and raises ``LeaseLost`` without writing when it does not: a worker that lost its
lease (paused past it, and another worker took the job) must not allocate for a load
balancer another worker now converges.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lbaas.errors import TemporaryError
from lbaas.model.enums import (
    HealthMonitorType,
    L7PolicyAction,
    L7RuleType,
    LbAlgorithm,
    ListenerProtocol,
    MemberDownPolicy,
    PersistenceType,
    PoolProtocol,
)
from lbaas.model.graph import LoadBalancer, LoadBalancerId
from lbaas.model.health import HealthReport

if TYPE_CHECKING:
    from lbaas.config import Settings
    from lbaas.db.engine import Database
    from lbaas.db.jobs.job_queue import Claim


#: Listener options a data plane may honour on some protocols only: where a provider does
#: not declare one (``ProviderCapabilities.listener_options``), only Octavia's default is
#: accepted (connection_limit -1 or 0, a timeout's documented default).
LISTENER_OPTIONS = (
    "connection_limit",
    "timeout_client_data",
    "timeout_member_connect",
    "timeout_member_data",
    "timeout_tcp_inspect",
)


def every_listener_option(
    protocols: frozenset[ListenerProtocol],
) -> dict[str, frozenset[ListenerProtocol]]:
    """``listener_options`` for a data plane that enforces them all on ``protocols``."""
    return dict.fromkeys(LISTENER_OPTIONS, protocols)


class LeaseLost(TemporaryError):
    """The converge job's lease was taken over: the provider wrote nothing and stopped.

    Temporary, so the runner only tries to release a lease it no longer holds (a no-op);
    the worker that holds the lease now does the work.
    """

    def __init__(self, loadbalancer_id: str, owner: str) -> None:
        super().__init__(
            f"the converge of {loadbalancer_id} was taken over from {owner}",
            operator_message=f"lease of {loadbalancer_id} lost by {owner}; no provider write made",
        )


@dataclass(frozen=True)
class ProviderContext:
    """What a provider is built with: the settings and, for stateful ones, the database."""

    settings: Settings
    database: Database | None = None


@dataclass(frozen=True)
class ProviderCapabilities:
    """What a provider supports; the API refuses (400) whatever is not listed here."""

    listener_protocols: frozenset[ListenerProtocol]
    pool_protocols: frozenset[PoolProtocol]
    lb_algorithms: frozenset[LbAlgorithm]
    persistence_types: frozenset[PersistenceType]
    health_monitor_types: frozenset[HealthMonitorType]
    l7_actions: frozenset[L7PolicyAction] = frozenset()
    l7_rule_types: frozenset[L7RuleType] = frozenset()
    # Listener protocols that may carry L7 policies (HAProxy: the HTTP ones only).
    l7_listener_protocols: frozenset[ListenerProtocol] = frozenset(ListenerProtocol)
    # Flavor and availability-zone keys with a one-line description each.
    flavor_keys: Mapping[str, str] = field(default_factory=dict)
    availability_zone_keys: Mapping[str, str] = field(default_factory=dict)
    # Keys listed above (so the lists name what clients know) that the provider cannot
    # honour yet: a profile that sets one is refused with a 400.
    unhonoured_keys: frozenset[str] = frozenset()
    # Keys whose value must be JSON true or false.
    boolean_keys: frozenset[str] = frozenset()
    # Keys whose values the provider can honour only in part: the values it takes.
    profile_values: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # Why a key's other values are refused here (said in the 400), where there is a reason.
    profile_value_notes: Mapping[str, str] = field(default_factory=dict)
    # Pool protocols whose pools take fewer algorithms than ``lb_algorithms`` (the amphora's
    # UDP pools are balanced by the kernel, which has no least-connections): those it takes.
    lb_algorithms_by_pool_protocol: Mapping[PoolProtocol, frozenset[LbAlgorithm]] = field(
        default_factory=dict
    )
    # IP versions the provider balances UDP in (VIP and members); None: any. The amphora's
    # L4 engine writes IPv4 tables only.
    datagram_ip_versions: frozenset[int] | None = None
    # Why an option absent above is absent, by its value, when a sentence helps the tenant
    # more than "does not support" (UDP on an amphora agent in loopback mode).
    refusal_notes: Mapping[str, str] = field(default_factory=dict)
    # Listener protocols on which the data plane enforces ``allowed_cidrs`` (drops every
    # other source). Empty by default: a listener with allowed_cidrs on any other protocol
    # is refused (400), never accepted and left unenforced (a security control).
    allowed_cidrs_protocols: frozenset[ListenerProtocol] = frozenset()
    # Pool protocols whose members the data plane can talk TLS to (``tls_enabled``).
    # Empty by default: a re-encrypting pool is refused (400) rather than accepted and
    # sent in the clear.
    pool_tls_protocols: frozenset[PoolProtocol] = frozenset()
    # Per pool protocol, the member-down policies besides ``keep`` (what every data plane
    # does unasked) that the data plane carries out; a pool asking for another is refused
    # (400). Empty by default: only ``keep``.
    member_down_policies: Mapping[PoolProtocol, frozenset[MemberDownPolicy]] = field(
        default_factory=dict
    )
    # The listener protocols on which the data plane enforces each of ``LISTENER_OPTIONS``
    # (by option). Elsewhere only Octavia's default is accepted: another value is refused
    # (400) rather than accepted and left unenforced. ``refusal_notes`` may say why, by
    # option name.
    listener_options: Mapping[str, frozenset[ListenerProtocol]] = field(default_factory=dict)
    # Listener protocols whose timeouts the data plane keeps in whole seconds (the kernel's
    # conntrack): a timeout that is not a whole number of seconds is refused there.
    whole_second_timeouts: frozenset[ListenerProtocol] = frozenset()
    # Whether the data plane binds a load balancer's ``additional_vips``. False by default:
    # they are refused (400) rather than allocated, shown and never answered on.
    additional_vips: bool = False


@dataclass(frozen=True)
class ApplyResult:
    """What a successful ``apply`` observed; the health roll-up may refine it later."""

    # Set when the provider could already see the data plane serving (e.g. HAProxy up).
    serving: bool = True
    detail: str = ""
    # The version the data plane was sent, when it reports which version it holds
    # (``applied_versions``): kept with the job so a resync can check instead of converge.
    version: int | None = None


class ProviderDriver(abc.ABC):
    """A data plane that can carry load balancers."""

    #: The name tenants put in a load balancer's ``provider`` field.
    name: str = ""
    #: One line shown by ``GET /v2/lbaas/providers``.
    description: str = ""

    def __init__(self, context: ProviderContext) -> None:
        self.context = context

    @abc.abstractmethod
    def capabilities(self) -> ProviderCapabilities:
        """Declare what this provider supports. Pure; called once at start-up."""

    @abc.abstractmethod
    def apply(self, graph: LoadBalancer, fence: Claim, *, rebuild: bool = False) -> ApplyResult:
        """Make the data plane of ``graph.id`` match ``graph`` exactly.

        Creates what is missing, changes what differs and removes what the graph no longer
        holds. Idempotent: applying an unchanged graph changes nothing. ``rebuild`` asks
        for the data plane to be torn down and built afresh (failover), keeping the VIP.
        ``fence`` is the job's claim: every database write is made only while it holds its
        lease, checked in the writing transaction (see the module docstring). Raises
        TemporaryError (``LeaseLost`` when the fence is lost) or PermanentError.
        """

    @abc.abstractmethod
    def delete(self, loadbalancer_id: LoadBalancerId, fence: Claim) -> None:
        """Remove every trace of the load balancer from the data plane.

        Idempotent: deleting what does not exist succeeds. Database writes are fenced by
        ``fence`` as in ``apply``. Raises TemporaryError (``LeaseLost`` included).
        """

    @abc.abstractmethod
    def status(self, loadbalancer_id: LoadBalancerId) -> HealthReport | None:
        """The latest health observed for the load balancer, or None if nothing is known.

        Providers whose data planes push heartbeats may return None and let the health
        manager record what arrives.
        """

    def applied_versions(self, wanted: Mapping[str, int]) -> set[str] | None:
        """Of ``wanted`` (load balancer id: the ``ApplyResult.version`` its last converge
        sent), the ids whose whole data plane reports holding exactly that version now: the
        resync need not converge those (``lbaas.jobs.resync_check``). None: it cannot tell
        now (its data plane did not answer), so the resync waits a little before it
        converges them. The default holds nothing: every one is converged, as before."""
        return set()

    def close(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release what the provider holds (connections, threads)."""
