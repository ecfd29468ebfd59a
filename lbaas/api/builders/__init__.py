"""Request schema → rows, shared by the standalone POSTs and the single-call LB create.

A builder validates one create schema against an already locked load balancer and adds
the new row (PENDING_CREATE, OFFLINE) to the session. It does not lock, count quotas,
mark parents, enqueue or notify: those belong to the request that calls it, so the graph
create can build a whole tree under one lock and one job.
"""
