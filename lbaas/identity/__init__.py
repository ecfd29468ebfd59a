"""Who is calling, and what they may do.

The caller comes from one of three places (``api.auth_strategy``): ``noauth`` trusts the
headers as sent and is served on loopback only unless the operator says otherwise
(``exposure``); ``keystone_headers`` trusts a proxy that validated the token; ``keystone``
validates the token itself against Keystone (``keystone_tokens``, ``token_middleware``).
Whatever the source, the caller becomes one credentials dict, and Octavia's oslo.policy
rules (``base_rules``, ``api_rules``, under Octavia's names, overridable by an operator's
policy file) decide. The API imports this package; it imports nothing of the API.
"""
