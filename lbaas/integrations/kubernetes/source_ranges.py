"""A Service's source ranges → the listeners' ``allowed_cidrs`` (pure).

Kubernetes has two places for them: ``spec.loadBalancerSourceRanges`` and, older, the
``service.beta.kubernetes.io/load-balancer-source-ranges`` annotation (comma-separated).
As Kubernetes' own service helper and cloud-provider-openstack read them, the spec field
wins when it is non-empty and the annotation is read only otherwise. Each range is
normalised the way lbaas's API stores it (host bits cleared, duplicates dropped) and the
result sorted, so that the desired state, its digest and the comparison with what
Octavia holds do not depend on how the Service spelled them. A range that is not an IPv4
or IPv6 network refuses the whole Service (a ``PermanentError``, reported as an Event):
dropping it silently would leave the load balancer open wider, or shut tighter, than
the Service says.
"""

from __future__ import annotations

import ipaddress

from lbaas.errors import PermanentError
from lbaas.integrations.kubernetes import names
from lbaas.integrations.kubernetes.objects import Service


def _network(text: str, where: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if "%" in text or "/" not in text:
        raise PermanentError(f"{where}: {text!r} is not a CIDR (address/prefix)")
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError as exc:
        raise PermanentError(f"{where}: {text!r} is not a CIDR ({exc})") from exc


def _written(service: Service) -> tuple[tuple[str, ...], str]:
    """The ranges as written, and where they were written."""
    if service.load_balancer_source_ranges:
        return service.load_balancer_source_ranges, "spec.loadBalancerSourceRanges"
    raw = service.annotations.get(names.ANNOTATION_SOURCE_RANGES, "")
    return tuple(part.strip() for part in raw.split(",") if part.strip()), (
        names.ANNOTATION_SOURCE_RANGES
    )


def allowed_cidrs(service: Service) -> tuple[str, ...]:
    """The networks the Service's listeners admit; empty means every source."""
    ranges, where = _written(service)
    networks = {_network(text.strip(), where) for text in ranges}
    ordered = sorted(networks, key=lambda net: (net.version, net.network_address, net.prefixlen))
    return tuple(str(net) for net in ordered)
