"""lbaas's own network registry: networks, subnets and the addresses allocated on them."""
