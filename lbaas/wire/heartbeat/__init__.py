"""The heartbeat wire format shared by agents (senders) and the health manager (receiver)."""
