"""The health manager: heartbeat receiver, status roll-up, counters, stale-amphora failover.

``rollup`` and ``counters`` are pure policy; ``store`` is the one seam to persistence;
``receiver`` and ``stale`` are the two loops the ``lbaas health`` service runs.
"""
