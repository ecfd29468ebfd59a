"""The health manager's records: amphora heartbeats and failover requests, listener
counters and their integer totals, the statistics summed from them."""
