"""The store's exceptions, and how errors of SQLite are classified into them.

Nothing above the store knows which engine answered: SQLite's errors are classified here by
their names (:func:`classify`), PostgreSQL's by their SQLSTATE in
:mod:`flagadmin.store.postgresql`, into the same few exceptions.
"""

from __future__ import annotations

import sqlite3


class StoreError(Exception):
    """Base of the store's own exceptions."""


class Unavailable(StoreError):
    """The database is busy, locked, gone or unreadable right now: retry later (HTTP 503)."""


class Conflict(StoreError):
    """A write broke a uniqueness rule: the record already exists (HTTP 409 or 400)."""


class NotADatabase(StoreError):
    """The file is not a flagadmin database (not SQLite, or encrypted, or corrupt)."""


#: SQLite primary result codes (``sqlite_errorname`` up to its first ``_`` after SQLITE_) that
#: mean "not now": another writer holds the lock, or the file cannot be opened or read.
_UNAVAILABLE = {"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_READONLY"}
_NOT_A_DATABASE = {"SQLITE_NOTADB", "SQLITE_CORRUPT"}


def _primary(name: str | None) -> str:
    """``SQLITE_BUSY_SNAPSHOT`` -> ``SQLITE_BUSY``: the primary code of an extended one."""
    if not name:
        return ""
    parts = name.split("_")
    return "_".join(parts[:2])


def classify(exc: sqlite3.Error) -> Exception:
    """Return the store exception that ``exc`` (raised by sqlite3) stands for, or ``exc``.

    By SQLite's error name (``exc.sqlite_errorname``), never by message text:
    busy/locked/cannot open/I/O error -> :class:`Unavailable`; a UNIQUE or PRIMARY KEY
    constraint -> :class:`Conflict`; not a database/corrupt -> :class:`NotADatabase`.
    """
    name = getattr(exc, "sqlite_errorname", None)
    primary = _primary(name)
    if primary in _UNAVAILABLE:
        return Unavailable(str(exc))
    if name in ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"):
        return Conflict(str(exc))
    if primary in _NOT_A_DATABASE:
        return NotADatabase(str(exc))
    return exc
