"""End-to-end tests of the amphora provider: real HAProxy, real backends, real traffic."""
