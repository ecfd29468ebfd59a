"""Session and connection types, re-exported so layers above ``lbaas.db`` need not import
SQLAlchemy."""

from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

__all__ = ["Connection", "Session"]
