"""Where the amphora provider keeps its allocations: the interface and its database form."""
