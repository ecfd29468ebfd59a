"""The amphora provider: HAProxy data planes run by per-host agents."""
