"""Integrations that drive lbaas (or any Octavia v2 API) from other systems.

They talk to lbaas only over HTTP, as any client does; ``.importlinter`` forbids them the
control plane's internals.
"""
