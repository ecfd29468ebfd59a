"""Providers: the data planes load balancers run on, behind one interface (base.py)."""
