"""The key manager's storage: sealed secrets, containers, consumers."""
