"""Converging a load balancer: make its data plane match its stored desired state."""
