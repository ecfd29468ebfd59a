"""Response views: rows → Octavia's JSON objects, one module per resource."""
