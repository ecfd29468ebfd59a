"""Octavia's provider driver for lbaas (issue 33).

Octavia keeps its API, database and users; each load balancer of provider ``lbaas`` (or
``lbaas-distributed``) is also created, with the same ids, in an lbaas control plane over
lbaas's Octavia-v2 API, which runs it on its data planes. Status and statistics come back
through the driver agent's sockets (``agent``). Depends on octavia-lib and httpx only.
"""
