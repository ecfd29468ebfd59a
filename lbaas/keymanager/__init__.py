"""A Barbican-compatible key manager: the part of Barbican's v1 API load balancing uses.

Served by the API process under ``/key-manager`` (see docs/architecture.md, "The key
manager"); storage and sealing are ``lbaas.db.secrets.secret_vault`` and ``lbaas.certs.kek``.
"""
