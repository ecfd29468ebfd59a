"""The HAProxy + keepalived data plane on one host: a registry of amphorae, each converged to its spec."""
