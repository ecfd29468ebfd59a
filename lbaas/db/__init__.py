"""Persistence: SQLAlchemy tables, sessions, repositories and migrations.

Modules are grouped by the data they hold, not by who reads it: the engine, sessions,
tables, migrations and generic row reads sit here; each kind of stored data has its
subpackage (``loadbalancers``, ``amphorae``, ``hosts``, ``health``, ``jobs``, ``network``,
``secrets``, ``quotas``). A read that joins several kinds lives with the kind it reports on
and calls the others' modules for their parts. docs/architecture.md lists every module.

SQLAlchemy is imported only inside this package; its exceptions are translated into
``lbaas.errors`` here.
"""
