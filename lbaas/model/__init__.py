"""The domain model: enums, the load-balancer graph and health reports.

Nothing here does I/O; every other layer may import it.
"""
