"""Certificate references (Octavia's ``*_container_ref`` fields) and where their material is
read from: lbaas's own key manager, or a Barbican the operator names."""
