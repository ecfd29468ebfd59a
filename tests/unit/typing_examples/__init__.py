"""Snippets that ``tests/unit/test_stored_tree_typing.py`` runs ``mypy --strict`` on."""
