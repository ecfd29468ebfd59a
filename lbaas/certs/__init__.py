"""The project's own certificate authority and the TLS contexts built from it.

Controller and agents talk HTTPS with mutual TLS; both sides trust only this CA, never the
system store, so a certificate from anywhere else cannot reach an agent.
"""
