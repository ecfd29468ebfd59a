"""The network registry: networks, subnets and reserved ports (addresses)."""
