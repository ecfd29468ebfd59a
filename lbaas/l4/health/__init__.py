"""Per-node health checks for the L4 engine, apart from forwarding (issue 12, point 2).

Pure part: ``monitor`` (what is probed, one member's rise/fall state), ``batch`` (state
changes grouped by count or time) and ``schedule`` (which probe is due when). I/O part:
``probes`` (TCP, UDP-CONNECT, HTTP and PING on the network) behind ``base.Prober``, and
``checker``, which runs the schedule on one asyncio loop in one thread. Any agent-side code
(a node's distributed load balancers, an amphora's UDP listeners) can use it.
"""
