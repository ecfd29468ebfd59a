"""Persistence: SQLAlchemy tables, sessions, repositories and migrations.

SQLAlchemy is imported only inside this package; its exceptions are translated into
``lbaas.errors`` here.
"""
