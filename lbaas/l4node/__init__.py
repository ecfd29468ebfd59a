"""The kernel L4 node: the distributed provider's load balancers on this host (L4 engine + health checks)."""
