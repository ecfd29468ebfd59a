"""The source port of the agent's VIP probes (``lbaas.amphora.vip_probe``), which every
rendered frontend rejects (``emit``): sent from the VIP itself, so no client can come from
there, and outside the kernel's ephemeral range.

A module of its own so that the agent learns it without importing the renderer (about a
tenth of the agent's start-up imports).
"""

VIP_PROBE_SOURCE_PORT = 61999
