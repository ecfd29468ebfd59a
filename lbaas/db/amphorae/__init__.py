"""Amphora records: creation and roles, what host heartbeats report about them, the
repair of half-built pairs."""
