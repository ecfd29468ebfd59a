"""Tests of the code rules tools/check.py enforces."""
