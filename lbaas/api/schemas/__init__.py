"""Request schemas in Octavia's shape and the views that render responses.

Schemas exist only at the edge: handlers turn a validated request into rows, and views
turn rows into Octavia's JSON. Nothing below the API sees these types.
"""
