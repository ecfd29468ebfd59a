"""The durable converge job queue and its PostgreSQL wake-up notification."""
