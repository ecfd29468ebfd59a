"""Coordination between lbaas processes on several hosts: leases and leader election."""
