"""Data-plane hosts (agents): enrolment, heartbeats, liveness, placement loads."""
