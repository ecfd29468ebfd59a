"""What crosses between the controller and the agents: amphora and L4 specs, reports, heartbeats.

Both sides import it; it imports nothing of either, so neither can come to depend on the other's code."""
