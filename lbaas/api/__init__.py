"""The Octavia-v2-compatible HTTP surface."""
