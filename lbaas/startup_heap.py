"""Keep the objects a long-running process made while starting out of Python's full
garbage collections.

A started API process holds ~175,000 container objects (modules, classes, functions,
SQLAlchemy's and FastAPI's tables) that live as long as it does. A full collection walks
every tracked object, so each took 110-150 ms in ``bench/operations.py`` (1000 load
balancers, 10,000 members, PostgreSQL), and the ``/metrics`` scrape's cache churn set one
off about once per scrape where every counter moved: the scrape's median doubled, from
~125 to ~250 ms. ``gc.freeze()`` moves what exists now into a generation collections
never walk; after it a full collection took 15-40 ms. What is frozen is never collected,
so the garbage is collected first and this runs once, after start-up, before serving.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> int:
    """Collect, then freeze every object that survived; how many are now frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
