"""Instance metadata: the signed headers a metadata proxy adds, shared by both ends."""
