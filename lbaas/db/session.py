"""The session type, re-exported so layers above ``lbaas.db`` need not import SQLAlchemy."""

from sqlalchemy.orm import Session

__all__ = ["Session"]
