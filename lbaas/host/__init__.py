"""Everything the agent changes on its host, behind one interface (``base.HostOps``).

This package is the only place in lbaas, besides ``lbaas/cli.py``, that imports
``subprocess``.
"""
