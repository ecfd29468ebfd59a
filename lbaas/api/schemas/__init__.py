"""Request schemas in Octavia's shape (responses are rendered by ``lbaas.api.views``).

Schemas exist only at the edge: handlers turn a validated request into rows, and views
turn rows into Octavia's JSON. Nothing below the API sees these types. How each field is
declared once for create and update is told in ``groups``.
"""
