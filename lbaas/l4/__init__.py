"""The L4 engine: Maglev tables hashed into by nftables, for every provider that needs one.

Pure part: ``maglev`` (the tables), ``service`` (what is balanced), ``nft`` (the ruleset
text) and ``engine`` (full load or slot updates). Side effects only in ``host``.
"""
