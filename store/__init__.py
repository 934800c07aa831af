"""The store layer: every SQL statement of flagadmin lives in this package.

Functions take a :class:`~flagadmin.store.engine.Connection` (which knows its dialect) as first
argument and return named rows: dicts keyed by field name, or small dataclasses. Nothing here
knows about HTTP. Errors of the engine come out as :class:`Unavailable` (retry later) or
:class:`Conflict` (a uniqueness rule was broken).
"""

from .engine import Conflict, Connection, NotADatabase, StoreError, Unavailable, connect

__all__ = ["Conflict", "Connection", "NotADatabase", "StoreError", "Unavailable", "connect"]
