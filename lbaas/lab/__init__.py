"""A multi-host lab on one machine: simulated hosts as network namespaces on a shared fabric.

Everything the lab builds lives inside network namespaces it owns and names after itself,
so the host's own networking is never touched and removing the namespaces removes the lab.
"""
