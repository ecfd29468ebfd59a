"""The L4 engine's side effects: nftables transactions and conntrack, behind ``base.NftOps``.

Only this package runs external programs for the engine (an import-linter contract).
"""
