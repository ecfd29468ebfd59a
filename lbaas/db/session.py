"""The session and connection types the API is handed, named for its type hints.

This is not a wall: the API holds real SQLAlchemy ORM sessions and rows (it writes rows
and calls ``session.get``/``refresh``/``flush``), and the import contract says only that
no module outside ``lbaas.db`` imports SQLAlchemy itself. What the API does not do is
write statements: those are functions in ``lbaas.db`` (``table_rows``, ``listing``,
``loadbalancers.loadbalancer_repo``, ``loadbalancers.l7_repo``, ``loadbalancers.pool_repo``).
It does use the session's own ``get``/``refresh`` (with row locks) and writes column
conditions (``MemberRow.pool_id == pool.id``) for their generic list, find and count
functions. See docs/architecture.md, "API request handling".
"""

from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

__all__ = ["Connection", "Session"]
