"""The durable job queue's runner and the worker loop that drives it."""
