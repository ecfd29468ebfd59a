"""The distributed provider: L4 load balancers decided on every node, no amphora."""
