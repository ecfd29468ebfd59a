"""Persistence of per-project quota records."""
