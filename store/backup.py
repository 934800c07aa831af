"""Online backup: a consistent copy of a live database with SQLite's backup API.

The copy is taken in one step of :meth:`sqlite3.Connection.backup`, inside one read
transaction of the source: it is the database exactly as it was at one commit, whatever the
server writes meanwhile (in WAL mode a reader neither blocks nor is blocked by the writer).
The copy is written to a temporary file beside the destination, switched to
``journal_mode=DELETE`` (a single self-contained file, no ``-wal`` beside it), checked with
``PRAGMA integrity_check``, flushed to disk and only then renamed into place: a crash during
a backup never leaves a half-written file under the destination's name.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .engine import BUSY_TIMEOUT_MS


class BackupError(Exception):
    """The backup cannot be made; the message says why and what to do. Nothing was written."""


@dataclass(frozen=True)
class BackupResult:
    """What a backup copied: its path, size in bytes, and schema version (``user_version``)."""

    path: Path
    size: int
    schema_version: int


def backup(source: str | Path, destination: str | Path, *, force: bool = False) -> BackupResult:
    """Copy the database ``source`` to ``destination`` as one consistent snapshot.

    ``source`` may be in use by a running server. An existing ``destination`` is refused
    unless ``force``; even then it is replaced only once the new copy is complete and checked.

    :raise BackupError: ``source`` is missing or not a SQLite database, ``destination``
        exists (without ``force``), is the source itself, or looks in use (a ``-wal`` beside it).
    """
    source, destination = Path(source), Path(destination)
    if not source.is_file():
        raise BackupError(f"{source} does not exist: give the database to back up with --db.")
    if destination.exists() and destination.resolve() == source.resolve():
        raise BackupError(f"{destination} is the database itself: give another path.")
    if destination.exists() and not force:
        raise BackupError(f"{destination} already exists: give another path, or --force to replace it.")
    if Path(f"{destination}-wal").exists():
        raise BackupError(
            f"{destination}-wal exists: {destination} looks in use by a running server; stop it, "
            f"or give another path."
        )
    folder = destination.parent
    handle, temporary = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=folder)
    os.close(handle)
    try:
        version = _copy(source, Path(temporary))
        with open(temporary, "rb") as copied:
            os.fsync(copied.fileno())
        os.replace(temporary, destination)
        _fsync_folder(folder)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return BackupResult(destination, destination.stat().st_size, version)


def _copy(source: Path, temporary: Path) -> int:
    """Back ``source`` up into ``temporary`` and check the copy; return its schema version."""
    # mode=rw: never creates a missing database. Nothing is written to it (no schema creation,
    # no upgrade); read-write only so that, when it is the last connection, closing it
    # checkpoints and removes the -wal as usual instead of leaving one behind.
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=rw", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    dst = sqlite3.connect(temporary, isolation_level=None)
    try:
        try:
            src.backup(dst)  # pages=-1: the whole database in one step, one snapshot
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"{source} cannot be backed up: {exc}") from exc
        dst.execute("PRAGMA journal_mode = DELETE")
        problems = [row[0] for row in dst.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise BackupError(f"The copy of {source} failed its integrity check: {'; '.join(problems[:5])}")
        return dst.execute("PRAGMA user_version").fetchone()[0]
    finally:
        dst.close()
        src.close()


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
