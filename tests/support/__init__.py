"""Test support code: fixtures' building blocks, clients and process runners."""
