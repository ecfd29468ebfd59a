"""lbaas: load balancing as a service, wire-compatible with OpenStack Octavia v2."""

__version__ = "0.1.0"
