"""The L4 tier: nodes that all carry a VIP at once, announced to a router over BGP.

Pure part: ``bird`` (the BIRD 2 configurations of the router and of a node), ``nat_return``
(the ruleset that makes members answer through the node) and ``lease`` (when a node counts
as down). Running BIRD and talking to it is ``lbaas.l4.host.bird``; the lab builds a tier
with ``lbaas.lab.tier``. docs/architecture.md, "The L4 tier", says what exists and what not.
"""
