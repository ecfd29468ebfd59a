"""``lbaas diagnose``: why a load balancer is not well, hop by hop (issue 17)."""
