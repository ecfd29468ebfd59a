"""Developer tools: the whole-suite runner and the code rules it enforces."""
