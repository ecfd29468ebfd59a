"""The L4 tier: nodes that all carry a VIP at once, announced to a router over BGP.

Pure part: ``bird`` (the BIRD 2 configurations of the router and of a node), ``nat_return``
(the ruleset that makes members answer through the node), ``dsr`` (direct server return),
``groups`` and ``lease`` (when a node counts as down). Its processes: ``node_agent`` (a node
renews its lease), ``watch_service`` and ``command`` (``lbaas tier watch|status``, the
control plane's lease watcher). Running BIRD and talking to it is ``lbaas.tier.host``; the
lab builds a tier with ``lbaas.lab.tier``. docs/architecture.md, "The L4 tier", says what
exists and what not.
"""
